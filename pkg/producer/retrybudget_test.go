package producer

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// sendFailing runs one sync send at now whose every attempt fails with
// errNotSent, and returns its attempts, Loop.RetryRefused and its error.
func sendFailing(p *Policy, now time.Time) (attempts int, refused bool, err error) {
	l := newLoop(p, KindSync, "T", now)
	for {
		if _, ok := l.next(now); !ok {
			break
		}
		if _, ok := l.start(queue("A"), now); !ok {
			break
		}
		l.finish(failed(errNotSent, 1))
	}
	_, err = l.Result()
	return l.Attempts(), l.RetryRefused(), err
}

// sendOK runs one sync send at now answered at once.
func sendOK(p *Policy, now time.Time) {
	l := newLoop(p, KindSync, "T", now)
	l.next(now)
	l.start(queue("A"), now)
	l.finish(answered(SendOK, 1))
}

// TestRetryBudget drives sends through one Policy with a budget and checks
// how many retries it allows: percent of the window's sends plus the floor,
// over a sliding 10 s window, on the times the loop is given.
func TestRetryBudget(t *testing.T) {
	tests := []struct {
		name        string
		percent     float64
		floor       int
		goodSends   int           // answered sends first (deposits)
		failing     int           // then sends whose every attempt fails
		gap         time.Duration // between the good sends and the failing ones
		wantRetries int           // retries made by the failing sends
		wantRefused int           // failing sends that ended refused
	}{
		{name: "off: every retry", percent: 0, failing: 10, wantRetries: 20},
		{name: "floor only", percent: 0.0001, floor: 1, failing: 20, wantRetries: 10, wantRefused: 15},
		{name: "a fifth of 100 good sends", percent: 0.2, goodSends: 100, failing: 20, wantRetries: 24, wantRefused: 9},
		{name: "deposits leave the window", percent: 0.2, goodSends: 100, failing: 4, gap: 11 * time.Second, wantRetries: 0, wantRefused: 4},
		{name: "half, with the failing sends' own deposits", percent: 0.5, failing: 40, wantRetries: 20, wantRefused: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.RetryBudget, cfg.RetryBudgetFloor = tt.percent, tt.floor
			p := mustPolicy(t, cfg, latency.ModeV5)
			now := t0
			for range tt.goodSends {
				sendOK(p, now)
			}
			now = now.Add(tt.gap)
			retries, refused := 0, 0
			for range tt.failing {
				n, refusedFlag, err := sendFailing(p, now)
				if refusedFlag != errors.Is(err, ErrRetryBudget) {
					t.Errorf("Loop.RetryRefused() = %v for error %v", refusedFlag, err)
				}
				retries += n - 1
				if errors.Is(err, ErrRetryBudget) {
					refused++
					var rb *RetryBudgetError
					if !errors.As(err, &rb) || !rb.RetryRefused() || !errors.Is(err, errNotSent) {
						t.Errorf("refused send's error %v: want a *RetryBudgetError wrapping the last error", err)
					}
					var se *SendError
					if !errors.As(err, &se) || se.Stop != StopFailed || se.Attempts != n {
						t.Errorf("refused send's SendError = %+v, want StopFailed after %d attempts", se, n)
					}
				}
			}
			if retries != tt.wantRetries || refused != tt.wantRefused {
				t.Errorf("retries %d, refused %d; want %d, %d", retries, refused, tt.wantRetries, tt.wantRefused)
			}
		})
	}
}

// TestRetryBudgetAnsweredEnd checks that a send with an earlier answer
// (RetryAnotherBrokerWhenNotStoreOK) whose retry the budget refuses returns
// that answer, as any early end of the reference's loop does.
func TestRetryBudgetAnsweredEnd(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RetryBudget, cfg.RetryBudgetFloor, cfg.RetryAnotherBrokerWhenNotStoreOK = 0.0001, 0, true
	p := mustPolicy(t, cfg, latency.ModeV5)
	l := newLoop(p, KindSync, "T", t0)
	l.next(t0)
	l.start(queue("A"), t0)
	if d := l.finish(answered(FlushDiskTimeout, 1)); !d.Retry {
		t.Fatal("Finish() did not allow a retry")
	}
	if _, ok := l.next(t0); ok {
		t.Fatal("Next() = true, want the budget to refuse the retry")
	}
	res, err := l.Result()
	if err != nil || res.Status != FlushDiskTimeout || l.Stop() != StopAnswered || !l.RetryRefused() {
		t.Errorf("Result() = %+v, %v (stop %v); want the earlier answer", res, err, l.Stop())
	}
}

// TestRetryBudgetConfig checks the presets and validation.
func TestRetryBudgetConfig(t *testing.T) {
	if c := Reference5(); c.RetryBudget != 0 || c.RetryBudgetFloor != 0 {
		t.Errorf("Reference5 budget = %v/%d, want off", c.RetryBudget, c.RetryBudgetFloor)
	}
	if c := DefaultConfig(); c.RetryBudget != 0.2 || c.RetryBudgetFloor != 10 {
		t.Errorf("DefaultConfig budget = %v/%d, want 0.2/10", c.RetryBudget, c.RetryBudgetFloor)
	}
	for _, bad := range []Config{{RetryBudget: -0.1}, {RetryBudget: 11}, {RetryBudgetFloor: -1}} {
		c := Reference5()
		c.RetryBudget, c.RetryBudgetFloor = bad.RetryBudget, bad.RetryBudgetFloor
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Errorf("Validate(budget %v, floor %d) = %v, want a *ConfigError", bad.RetryBudget, bad.RetryBudgetFloor, err)
		}
	}
}

// BenchmarkRetryBudget measures a deposit and a withdrawal.
func BenchmarkRetryBudget(b *testing.B) {
	rb := newRetryBudget(Config{RetryBudget: 0.2, RetryBudgetFloor: 10})
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rb.deposit(now)
		rb.withdraw(now)
		now = now.Add(time.Microsecond)
	}
}

// sendRetriedOK runs one sync send at now whose first attempt fails and
// whose retry is answered, and reports whether it was answered.
func sendRetriedOK(p *Policy, now time.Time) bool {
	l := newLoop(p, KindSync, "T", now)
	for first := true; ; first = false {
		if _, ok := l.next(now); !ok {
			break
		}
		if _, ok := l.start(queue("A"), now); !ok {
			break
		}
		if first {
			l.finish(failed(errNotSent, 1))
		} else {
			l.finish(answered(SendOK, 1))
		}
	}
	_, err := l.Result()
	return err == nil
}

// TestRetryBudgetRefund checks that a retry that found an answer is given
// back: with a budget of a fifth, after 10 answered sends every send of a
// run where each first attempt fails and each retry is answered gets its
// retry (without the refund most would be refused), and the budget still binds the
// failing sends that follow.
func TestRetryBudgetRefund(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RetryBudget, cfg.RetryBudgetFloor = 0.2, 0
	p := mustPolicy(t, cfg, latency.ModeV5)
	now := time.Unix(1000, 0)
	for range 10 {
		sendOK(p, now) // 10 sends: room for 2 retries
	}
	for i := range 100 {
		if !sendRetriedOK(p, now) {
			t.Fatalf("send %d: its retry was refused, want every answered retry given back", i)
		}
	}
	// 110 sends deposited, the retries given back: the failing sends get
	// a fifth of the window's sends, their own deposits included.
	retries, refused := 0, 0
	for range 20 {
		a, r, _ := sendFailing(p, now)
		retries += a - 1
		if r {
			refused++
		}
	}
	if retries != 26 || refused != 8 {
		t.Errorf("failing sends after refunds: %d retries, %d refused; want 26 and 8 (a fifth of the 130 sends)", retries, refused)
	}
}

// retryLater starts n sync sends at now whose first attempt fails and whose
// retry is withdrawn at now, and returns their loops, each with its retry
// started; answerAll answers those retries.
func retryLater(t *testing.T, p *Policy, now time.Time, n int) []Loop {
	t.Helper()
	loops := make([]Loop, n)
	for i := range loops {
		l := &loops[i]
		*l = newLoop(p, KindSync, "T", now)
		l.next(now)
		l.start(queue("A"), now)
		l.finish(failed(errNotSent, 0))
		if _, ok := l.next(now); !ok {
			t.Fatalf("send %d of %d: its retry was refused", i, n)
		}
		l.start(queue("B"), now)
	}
	return loops
}

// answerAll answers the retry of every loop lat after it started.
func answerAll(t *testing.T, loops []Loop, lat time.Duration) {
	t.Helper()
	for i := range loops {
		o := answered(SendOK, 0)
		o.Elapsed = lat
		loops[i].finish(o)
		if _, err := loops[i].Result(); err != nil {
			t.Fatalf("send %d: %v after its retry was answered", i, err)
		}
	}
}

// TestRetryBudgetRefundInLaterSlot is the storm of issue 21 (item 2): a
// refund that lands in a later slot than the retries it gives back must not
// outlive them.
//
//  1. In slot k (1000 s), 2,000 answered sends deposit room for 410 retries
//     (a fifth of them plus the floor of 10 a window).
//  2. 400 sends at 1000.9 s fail once and retry; each retry is withdrawn in
//     slot k and answered 200 ms later, in slot k+1, where it is given back.
//  3. At 1010.5 s slot k has left the window, slot k+1 has not. 4,000 sends
//     whose every attempt fails get at most 10 + 0.2 x 4,000 = 810 retries:
//     the window holds only their own deposits and none of their retries
//     was answered.
//
// Before the fix the refunds sat in slot k+1 as -400 once the withdrawals
// they gave back had left the window, and the storm got 1,210 retries.
func TestRetryBudgetRefundInLaterSlot(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RetryBudget, cfg.RetryBudgetFloor = 0.2, 1 // floor: 10 retries a window
	p := mustPolicy(t, cfg, latency.ModeV5)
	slotK := time.Unix(1000, 0)
	for range 2000 {
		sendOK(p, slotK)
	}
	answerAll(t, retryLater(t, p, slotK.Add(900*time.Millisecond), 400), 200*time.Millisecond)
	storm := slotK.Add(10500 * time.Millisecond)
	retries := 0
	for range 4000 {
		a, _, _ := sendFailing(p, storm)
		retries += a - 1
	}
	if bound := 10 + 4000/5; retries > bound {
		t.Errorf("storm of 4000 failing sends got %d retries, want at most %d (10 + 0.2 x 4000)", retries, bound)
	} else if retries != bound {
		t.Errorf("storm of 4000 failing sends got %d retries, want the budget's %d", retries, bound)
	}
}

// TestRetryBudgetNeverOverspends drives the budget with sends whose retries
// span slots and whose refunds come up to 3 s later, in random order, and
// checks at every retry it allows that the window's retries not given back
// stay within floor + percent x the window's sends (the bound a refund must
// not lift), against a model that keeps, per slot, the sends and the
// retries not given back.
func TestRetryBudgetNeverOverspends(t *testing.T) {
	const percent, floorPerSec = 0.2, 1
	const tick = 1500 * time.Microsecond // between steps: 30 s in all
	type send struct {
		want    int // retries it will make
		charges retryCharges
		slots   []int64 // each retry's slot
	}
	for seed := range uint64(8) {
		rnd := rand.New(rand.NewPCG(seed, 21))
		b := newRetryBudget(Config{RetryBudget: percent, RetryBudgetFloor: floorPerSec})
		sends, kept := map[int64]int64{}, map[int64]int64{} // per slot
		var retrying []*send
		due := map[int][]*send{}                  // per step, the sends answered then
		refused, late := 0, 0                     // refused retries; refunds in a later slot than a retry
		start := time.Unix(int64(seed%2)*5000, 0) // odd seeds start in slot 0
		for step := range 20000 {
			now := start.Add(time.Duration(step) * tick)
			cur := now.UnixNano() / int64(budgetSlot)
			// Answer the sends whose time has come, in random order.
			answered := due[step]
			delete(due, step)
			rnd.Shuffle(len(answered), func(i, j int) { answered[i], answered[j] = answered[j], answered[i] })
			for _, s := range answered {
				if rnd.IntN(3) > 0 { // answered: its retries are given back
					if s.slots[0] != cur {
						late++
					}
					b.refund(now, &s.charges)
					for _, sl := range s.slots {
						kept[sl]--
					}
				}
			}
			// A new send, or a retry of one that is retrying.
			if len(retrying) == 0 || rnd.IntN(2) == 0 {
				b.deposit(now)
				sends[cur]++
				if want := rnd.IntN(4); want > 0 {
					retrying = append(retrying, &send{want: want})
				}
				continue
			}
			i := rnd.IntN(len(retrying))
			s := retrying[i]
			slot, ok := b.withdraw(now)
			if ok {
				if slot != cur {
					t.Fatalf("seed %d: withdraw charged slot %d at slot %d", seed, slot, cur)
				}
				kept[slot]++
				s.slots = append(s.slots, slot)
				s.charges.add(slot)
			}
			if !ok || len(s.slots) == s.want {
				// Refused (the send ends unanswered), or answered within 3 s.
				retrying[i] = retrying[len(retrying)-1]
				retrying = retrying[:len(retrying)-1]
				if ok {
					at := step + 1 + rnd.IntN(int(3*time.Second/tick))
					due[at] = append(due[at], s)
				}
			}
			if !ok {
				refused++
				continue
			}
			var n, k int64
			for sl := cur - budgetSlots + 1; sl <= cur; sl++ {
				n += sends[sl]
				k += kept[sl]
			}
			if bound := floorPerSec*budgetWindow.Seconds() + percent*float64(n); float64(k) > bound {
				t.Fatalf("seed %d, step %d: %d retries in the window not given back, bound %.1f (%d sends)", seed, step, k, bound, n)
			}
		}
		if refused == 0 || late == 0 {
			t.Fatalf("seed %d: %d retries refused, %d refunds in a later slot: the run does not test the bound", seed, refused, late)
		}
	}
}
