package producer

import (
	"fmt"
	"testing"
	"time"
)

// TestRoomWaitAllowance scripts the room-wait allowance (roomwait.go):
// sends deposit a share of a wait, requests are granted while the allowance
// lasts and the episode's push-back is relieved, an episode that fails
// either test waits no more until a window passes without a request, and
// the episodes that begin soon after failed ones do not wait either, for
// twice as long after each failure in a row, until an episode passes the
// relief test.
func TestRoomWaitAllowance(t *testing.T) {
	type ev struct {
		at    time.Duration // since the start
		sends int           // sends deposited at at (0: a request)
		asks  int           // requests at at, each answered want
		want  bool
	}
	sends := func(at time.Duration, n int) ev { return ev{at: at, sends: n} }
	ask := func(at time.Duration, n int, want bool) ev { return ev{at: at, asks: n, want: want} }
	ms := time.Millisecond
	for _, tt := range []struct {
		name  string
		share float64
		evs   []ev
	}{
		{"no sends, no wait", 0.01, []ev{ask(0, 1, false)}},
		{"a producer of few sends still waits once", 0.01, []ev{sends(0, 100), ask(10*ms, 1, true), ask(20*ms, 1, false)}},
		{"the allowance is the share of the sends", 0.01, []ev{
			// 2,000 sends deposit 20 waits.
			sends(0, 1000), sends(900*ms, 1000), ask(1000*ms, 20, true), ask(1001*ms, 1, false)}},
		{"the allowance holds two windows of deposits at most", 0.01, []ev{
			// 1,000 sends a window for five windows: 50 deposited, 20 kept.
			sends(0, 1000), sends(1000*ms, 1000), sends(2000*ms, 1000), sends(3000*ms, 1000), sends(4000*ms, 1000),
			ask(4500*ms, 20, true), ask(4501*ms, 1, false)}},
		{"relieved: the second window asks at most half the first", 0.01, []ev{
			sends(0, 4000), ask(2000*ms, 10, true), ask(2900*ms, 2, true), // 12 in the first window
			ask(3500*ms, 6, true), // 6 in the second: half, relieved
			ask(4200*ms, 5, true), // past the test: the allowance decides
		}},
		{"not relieved: the push-back goes on", 0.01, []ev{
			sends(0, 4000), ask(2000*ms, 10, true), ask(2900*ms, 2, true), // 12 in the first window
			ask(3500*ms, 6, true), ask(3600*ms, 1, false), // the 7th in the second window is past half
			ask(4200*ms, 1, false), // the episode waits no more
		}},
		{"an emptied allowance ends the episode's waits", 0.01, []ev{
			sends(0, 1000), ask(1000*ms, 10, true), ask(1001*ms, 1, false),
			sends(1500*ms, 2000), ask(1600*ms, 1, false), // refilled, but the episode is dry
		}},
		{"a quiet window ends the episode", 0.01, []ev{
			sends(0, 1000), ask(1000*ms, 10, true), ask(1001*ms, 1, false),
			sends(1500*ms, 2000), ask(2002*ms, 1, true), // a new episode, a full allowance
		}},
		{"share 1: every send may wait", 1, []ev{sends(0, 3), ask(ms, 3, true), ask(2*ms, 1, false)}},
		{"failed episodes hold the next ones off, twice as long each time", 0.01, []ev{
			sends(0, 1000), ask(1000*ms, 10, true), ask(1000*ms, 1, false), // failed: held off until 2 s
			sends(1100*ms, 1000), ask(2500*ms, 10, true), ask(2500*ms, 1, false), // tried again; failed: held off until 4.5 s
			sends(2600*ms, 1000), ask(3600*ms, 1, false), // a new episode, held off
			ask(4800*ms, 1, true), // past the hold
		}},
		{"an episode that passes the relief test clears the holds", 0.01, []ev{
			sends(0, 1000), ask(1000*ms, 10, true), ask(1000*ms, 1, false), // failed: held off until 2 s
			sends(1100*ms, 2000), ask(2500*ms, 4, true), ask(3500*ms, 2, true), // relieved
			ask(4500*ms, 14, true), ask(4500*ms, 1, false), // past the test; then emptied: held off for 1 s, not 2
			sends(5550*ms, 1000), ask(5600*ms, 1, true),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newRoomWait(Config{RoomWait: tt.share})
			t0 := time.Unix(1_700_000_000, 0)
			for i, e := range tt.evs {
				for range e.sends {
					w.deposit(t0.Add(e.at))
				}
				for k := range e.asks {
					if got := w.request(t0.Add(e.at)); got != e.want {
						t.Fatalf("event %d (%v): request %d at %v = %v, want %v (%s)", i, e.at, k+1, e.at, got, e.want, w.state())
					}
				}
			}
		})
	}
	if newRoomWait(Config{}) != nil {
		t.Error("newRoomWait(RoomWait 0) is not nil: a producer without the setting has an allowance")
	}
}

// state describes w for a failure message.
func (w *roomWait) state() string {
	return fmt.Sprintf("%.6f waits left, episode early %d late %d, dry %v, strikes %d, held until %v",
		float64(w.tokens)/oneWait, w.early, w.late, w.dry, w.strikes, w.hold.UnixMilli()%100_000)
}
