package producer

import (
	"errors"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// sendFailing runs one sync send at now whose every attempt fails with
// errNotSent, and returns its attempts, Loop.RetryRefused and its error.
func sendFailing(p *Policy, now time.Time) (attempts int, refused bool, err error) {
	l := NewLoop(p, KindSync, "T", now)
	for {
		if _, ok := l.Next(now); !ok {
			break
		}
		if _, ok := l.Start(queue("A"), now); !ok {
			break
		}
		l.Finish(failed(errNotSent, 1))
	}
	_, err = l.Result()
	return l.Attempts(), l.RetryRefused(), err
}

// sendOK runs one sync send at now answered at once.
func sendOK(p *Policy, now time.Time) {
	l := NewLoop(p, KindSync, "T", now)
	l.Next(now)
	l.Start(queue("A"), now)
	l.Finish(answered(SendOK, 1))
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
	l := NewLoop(p, KindSync, "T", t0)
	l.Next(t0)
	l.Start(queue("A"), t0)
	if d := l.Finish(answered(FlushDiskTimeout, 1)); !d.Retry {
		t.Fatal("Finish() did not allow a retry")
	}
	if _, ok := l.Next(t0); ok {
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
	l := NewLoop(p, KindSync, "T", now)
	for first := true; ; first = false {
		if _, ok := l.Next(now); !ok {
			break
		}
		if _, ok := l.Start(queue("A"), now); !ok {
			break
		}
		if first {
			l.Finish(failed(errNotSent, 1))
		} else {
			l.Finish(answered(SendOK, 1))
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
