package latency_test

import (
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestStallRemark checks which busy remarks say a broker's store stalled:
// a busy page cache's refusal or drain, or a send queue's timeout with
// fewer than 8 sends queued; not a full send pool or a long queue, nor a
// remark whose queue size is missing or malformed.
func TestStallRemark(t *testing.T) {
	for _, tt := range []struct {
		remark string
		want   bool
	}{
		{"[REJECTREQUEST]system busy, start flow control for a while", true},
		{"[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 5ms, size of queue: 3", true},
		{"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 208ms, size of queue: 0", true},
		{"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, size of queue: 7", true},
		{"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, size of queue: 8", false},
		{"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, size of queue: 57", false},
		{"[TIMEOUT_CLEAN_QUEUE]broker busy, period in queue: 200ms, size of queue: ", false},
		{"[TIMEOUT_CLEAN_QUEUE]broker busy, period in queue: 200ms, size of queue: -1", false},
		{"[TIMEOUT_CLEAN_QUEUE]broker busy", false},
		{"[OVERLOAD]system busy, start flow control for a while", false},
		{"[simulated] busy", false},
		{"", false},
	} {
		if got := latency.StallRemark(tt.remark); got != tt.want {
			t.Errorf("StallRemark(%q) = %v, want %v", tt.remark, got, tt.want)
		}
	}
}

func stalled() latency.Outcome {
	return latency.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Latency: 200 * time.Millisecond,
		Remark: "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, size of queue: 0"}
}

func full() latency.Outcome {
	return latency.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Latency: time.Millisecond,
		Remark: "[OVERLOAD]system busy, start flow control for a while"}
}

// TestStallIsolation: under the capacity model a stall answer isolates the
// broker for Capacity.Recovery (1 s) the first time, reachable, with a
// stall event; later answers of sends queued during the same stall change
// nothing; a stall soon after the isolation ended is a repeat and isolates
// four times as long; one after a long quiet starts again at 1 s; a full
// broker's busy answer isolates nothing.
func TestStallIsolation(t *testing.T) {
	var events []latency.IsolationEvent
	obs := isolationRecorder(func(ev latency.IsolationEvent) { events = append(events, ev) })
	r := newPresetRigWith(t, []latency.Option{latency.WithObserver(obs)}, 4, 1)
	until := func() time.Duration {
		t.Helper()
		it, ok := r.s.Table().Item("b1")
		if !ok {
			t.Fatal("no item for b1")
		}
		return it.IsolatedUntil.Sub(r.clock.Now())
	}
	r.s.Report(pickOf(t, r, "b0"), full())
	if !r.s.Table().IsAvailable("b0") {
		t.Error("a full broker's busy answer isolated it")
	}

	r.s.Report(pickOf(t, r, "b1"), stalled())
	if r.s.Table().IsAvailable("b1") || !r.s.Table().IsReachable("b1") {
		t.Fatalf("after a stall answer: available %v, reachable %v; want isolated and reachable",
			r.s.Table().IsAvailable("b1"), r.s.Table().IsReachable("b1"))
	}
	if d := until(); d != time.Second {
		t.Errorf("first stall isolation: %v, want 1s", d)
	}
	if len(events) != 1 || events[0].Reason != latency.ReasonStall || events[0].Broker != "b1" {
		t.Errorf("events = %+v, want one stall isolation of b1", events)
	}
	r.clock.Advance(100 * time.Millisecond)
	r.s.Report(latency.Pick{Queue: &r.info.Queues()[1], Stage: latency.StageAvailable, Reporter: r.s}, stalled())
	if d := until(); d != 900*time.Millisecond || len(events) != 1 {
		t.Errorf("a queued send's stall answer during the isolation: %v left, %d events; want 900ms, 1", d, len(events))
	}

	r.clock.Advance(3 * time.Second) // 2.1 s after the isolation ended: a repeat
	r.s.Report(latency.Pick{Queue: &r.info.Queues()[1], Stage: latency.StageAvailable, Reporter: r.s}, stalled())
	if d := until(); d != 4*time.Second {
		t.Errorf("a repeat stall: %v, want 4s", d)
	}
	r.clock.Advance(5 * time.Second) // 1 s after: a repeat again
	r.s.Report(latency.Pick{Queue: &r.info.Queues()[1], Stage: latency.StageAvailable, Reporter: r.s}, stalled())
	if d := until(); d != 16*time.Second {
		t.Errorf("a second repeat: %v, want 16s", d)
	}
	r.clock.Advance(16*time.Second + 8*16*time.Second) // a quiet of 8 times the last isolation: forgiven
	r.s.Report(latency.Pick{Queue: &r.info.Queues()[1], Stage: latency.StageAvailable, Reporter: r.s}, stalled())
	if d := until(); d != time.Second {
		t.Errorf("a stall after a long quiet: %v, want 1s", d)
	}
}

// TestStallReliefWhenFull: a stall isolation holds while another broker
// has room, and ends once a full broker's busy answer leaves no broker
// outside it with room: the stalled broker serves between its stalls, and
// the others have none to give. A busy answer whose remark does not say
// the broker is full ends nothing. A stall answer after the relief
// isolates the broker again.
func TestStallReliefWhenFull(t *testing.T) {
	r := newPresetRig(t, 3, 2)
	tb := r.s.Table()
	r.s.Report(pickOf(t, r, "b1"), stalled())
	if tb.IsAvailable("b1") {
		t.Fatal("a stall answer did not isolate b1")
	}
	for range 3 { // b0 below half weight, b2 at full
		r.s.Report(pickOf(t, r, "b0"), full())
	}
	if tb.IsAvailable("b1") {
		t.Fatal("b1's stall isolation ended while b2 had room")
	}
	for range 2 { // b2 at 0.56: still room
		r.s.Report(pickOf(t, r, "b2"), full())
	}
	if tb.IsAvailable("b1") {
		t.Fatal("b1's stall isolation ended while b2 was above half weight")
	}
	r.s.Report(pickOf(t, r, "b2"), latency.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy,
		Latency: time.Millisecond, Remark: "[simulated] busy"}) // b2 at 0.42, not saying full
	if tb.IsAvailable("b1") {
		t.Fatal("a busy answer that does not say full ended b1's stall isolation")
	}
	r.s.Report(pickOf(t, r, "b2"), full()) // b2 at 0.32: no room outside b1
	if !tb.IsAvailable("b1") || !tb.IsReachable("b1") {
		t.Fatalf("with no room elsewhere: b1 available %v, reachable %v; want both",
			tb.IsAvailable("b1"), tb.IsReachable("b1"))
	}
	r.s.Report(pickOf(t, r, "b1"), stalled())
	if tb.IsAvailable("b1") {
		t.Error("a stall answer after the relief did not isolate b1 again")
	}
}
