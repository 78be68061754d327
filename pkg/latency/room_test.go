package latency_test

import (
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestRoomRules: each of Room's rules over the accounts that decide it. The
// zero Room (the model off) answers as the reference behaves: retries and
// caps go ahead, no broker is the only room.
func TestRoomRules(t *testing.T) {
	tests := []struct {
		name                   string
		room                   latency.Room
		retry, attempt, onlyIt bool
	}{
		{"model off", latency.Room{}, true, true, false},
		{"no other broker known", latency.Room{Here: true, Answering: true}, true, true, false},
		{"another serving broker with room", latency.Room{Here: true, Answering: true,
			Others: 2, Reachable: 2, ReachableRoom: 1, Serving: 2, ServingRoom: 1}, true, true, false},
		{"room only on an isolated broker", latency.Room{Here: true, Answering: true,
			Others: 2, Reachable: 2, ReachableRoom: 1, Serving: 1}, false, true, false},
		{"the only room", latency.Room{Here: true, Answering: true,
			Others: 2, Reachable: 2, Serving: 2}, false, false, true},
		{"the only room, silent", latency.Room{Here: true,
			Others: 2, Reachable: 2, Serving: 2}, false, false, false},
		{"no room here, others reachable without room", latency.Room{Answering: true,
			Others: 2, Reachable: 2, Serving: 2}, false, true, false},
		{"no room here, the others unreachable", latency.Room{Answering: true, Others: 2}, true, false, false},
		{"room here, the others unreachable", latency.Room{Here: true, Answering: true, Others: 2}, true, false, true},
		{"others reachable but all isolated, none with room", latency.Room{Here: true, Answering: true,
			Others: 2, Reachable: 2}, true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.room.RetryElsewhere(); got != tt.retry {
				t.Errorf("RetryElsewhere() = %v, want %v", got, tt.retry)
			}
			if got := tt.room.AttemptElsewhere(); got != tt.attempt {
				t.Errorf("AttemptElsewhere() = %v, want %v", got, tt.attempt)
			}
			if got := tt.room.Only(); got != tt.onlyIt {
				t.Errorf("Only() = %v, want %v", got, tt.onlyIt)
			}
		})
	}
}

// TestRoomAccount: Strategy.Room counts, in one scan, the other brokers by
// what the model and the table know of them: one pushed back below half
// weight (reachable, serving, no room), one isolated for a slow answer
// (reachable, not serving, with room), one that timed out (unreachable),
// one untouched; and the broker itself: room, and answering only within
// AnsweredWindow of its last answer.
func TestRoomAccount(t *testing.T) {
	r := newPresetRig(t, 5, 1)
	// b3 first: a timeout on a broker that answered while the attempt
	// waited would be slowness (TestCapacitySlowNotDown), and pickOf
	// answers the picks it passes over.
	r.s.Report(pickOf(t, r, "b3"), latency.Outcome{Class: latency.ClassTransportTimeout, Latency: time.Second})
	for range 8 {
		r.s.Report(pickOf(t, r, "b1"), pushedBack())
	}
	r.s.Report(pickOf(t, r, "b2"), answered(3*time.Second))
	r.s.Report(pickOf(t, r, "b4"), answered(time.Millisecond))
	r.s.Report(pickOf(t, r, "b0"), answered(time.Millisecond))
	want := latency.Room{Here: true, Answering: true, Latency: time.Millisecond,
		Others: 4, Reachable: 3, ReachableRoom: 2, Serving: 2, ServingRoom: 1}
	got := r.s.Room("b0")
	// The least latency of b1, b2 and b4: b4's 1 ms, or 0 when pickOf
	// answered none of b1's picks (b1 has no average then).
	if el := got.ElsewhereLatency; el != 0 && el != time.Millisecond {
		t.Errorf("Room(b0).ElsewhereLatency = %v, want 1ms (b4's) or 0 (b1 without an average)", el)
	}
	if got.ElsewhereLatency = 0; got != want {
		t.Errorf("Room(b0) = %+v, want %+v", got, want)
	}
	r.clock.Advance(latency.AnsweredWindow + time.Millisecond)
	if got := r.s.Room("b0"); got.Answering {
		t.Errorf("Room(b0).Answering = true %v after its last answer, want false", latency.AnsweredWindow+time.Millisecond)
	}
	if got := r.s.Room("b1"); got.Here {
		t.Error("Room(b1).Here = true after 8 push-backs, want false")
	}
	if got := r.s.Room("unknown"); got.Here || got.Others != 5 {
		t.Errorf("Room(unknown) = %+v, want no room here and 5 others", got)
	}
	off := newPresetRig(t, 3, 1, func(c *latency.Config) { c.Capacity = nil })
	if got := off.s.Room("b0"); got != (latency.Room{}) {
		t.Errorf("capacity model off: Room(b0) = %+v, want the zero Room", got)
	}
}

// TestRoomLatencySlowAnswers: Room.Latency is the broker's answered-latency
// average, faded to now (and ElsewhereLatency the least of the other
// reachable brokers'): a broker answering at 1.5 s shows a second or more
// (the send loop then leaves its attempts uncapped by a 1 s per-attempt
// cap), and once it has not answered for two seconds (a broker that froze:
// timeouts add no sample) it has faded below a second.
func TestRoomLatencySlowAnswers(t *testing.T) {
	r := newPresetRig(t, 3, 1)
	var picks []latency.Pick
	for range 64 {
		picks = append(picks, pickOf(t, r, "b0")) // taken while b0 is fast
	}
	for _, p := range picks {
		r.s.Report(p, answered(1500*time.Millisecond))
	}
	if got := r.s.Room("b0").Latency; got < time.Second || got > 1500*time.Millisecond {
		t.Errorf("Room(b0).Latency = %v after 64 answers at 1.5 s, want 1 s to 1.5 s", got)
	}
	if got := r.s.Room("b1").Latency; got >= time.Second {
		t.Errorf("Room(b1).Latency = %v for a broker that has not answered, want under 1 s", got)
	}
	// ElsewhereLatency is the other reachable brokers' least: b2 answers
	// fast (pickOf answers the picks it passes over in 1 ms).
	if got := r.s.Room("b1").ElsewhereLatency; got >= 500*time.Millisecond {
		t.Errorf("Room(b1).ElsewhereLatency = %v with b2 answering fast, want under half a second", got)
	}
	picks = picks[:0]
	for range 64 {
		picks = append(picks, pickOf(t, r, "b2"))
	}
	for _, p := range picks {
		r.s.Report(p, answered(1500*time.Millisecond))
	}
	if got := r.s.Room("b1").ElsewhereLatency; got < time.Second || got > 1500*time.Millisecond {
		t.Errorf("Room(b1).ElsewhereLatency = %v with b0 and b2 answering at 1.5 s, want 1 s to 1.5 s", got)
	}
	if got := r.s.Room("b0").ElsewhereLatency; got >= 500*time.Millisecond {
		t.Errorf("Room(b0).ElsewhereLatency = %v with b1 answering fast, want under half a second", got)
	}
	r.clock.Advance(2 * time.Second)
	if got := r.s.Room("b0").Latency; got >= time.Second {
		t.Errorf("Room(b0).Latency = %v after 2 s without an answer, want under 1 s", got)
	}
}
