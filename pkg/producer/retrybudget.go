package producer

import (
	"errors"
	"sync"
	"time"
)

// This file holds the retry budget (Config.RetryBudget), Finagle's
// RetryBudget: every send deposits RetryBudget of a retry, every retry
// withdraws one, and RetryBudgetFloor retries a second are allowed whatever
// the sends, all counted over a sliding window of budgetWindow. A retry the
// budget cannot pay for does not happen: the send ends with its last
// attempt's error, wrapped in a *RetryBudgetError. So when most attempts
// fail (a cluster short of capacity, an outage of many brokers) retries add
// at most a fifth to the load instead of tripling it, while a few failures
// among many sends are all retried.
//
// The bound, over any budgetWindow: failed retries (those not given back by
// a refund) are at most RetryBudget x sends + RetryBudgetFloor a second;
// a retry that got its answer ends its send, so there is at most one per
// send. Attempts are therefore at most (2 + RetryBudget) x sends +
// RetryBudgetFloor a second, and under a storm, where retries fail, about
// (1 + RetryBudget) x sends + RetryBudgetFloor a second: 1.2 x sends + 10 a
// second in the mqfault preset, where the reference's retries triple the
// attempts (3 x sends). A send that waited for room (roomwait.go) makes its
// attempt after the wait outside the budget, one per wait: at most
// Config.RoomWait x sends more (0.01 x sends in the preset).

// ErrRetryBudget matches (errors.Is) the error of a send whose retry the
// producer's retry budget refused.
var ErrRetryBudget = errors.New("producer: retry refused by the retry budget")

// RetryBudgetError wraps the last attempt's error of a send whose retry the
// retry budget refused. errors.Is(err, ErrRetryBudget) matches it; Unwrap
// returns the last attempt's error.
type RetryBudgetError struct {
	Err error
}

func (e *RetryBudgetError) Error() string {
	if e.Err == nil {
		return ErrRetryBudget.Error()
	}
	return ErrRetryBudget.Error() + " (retries are at most the budget's share of sends); last error: " + e.Err.Error()
}

// Unwrap returns the last attempt's error.
func (e *RetryBudgetError) Unwrap() error { return e.Err }

// Is matches ErrRetryBudget.
func (e *RetryBudgetError) Is(target error) bool { return target == ErrRetryBudget }

// RetryRefused reports true: a retry budget refused the send's retry (what
// the simulator and metrics count).
func (e *RetryBudgetError) RetryRefused() bool { return true }

// budgetWindow is how long deposits and withdrawals count (Finagle's TTL),
// in budgetSlots slots.
const (
	budgetWindow = 10 * time.Second
	budgetSlots  = 10
	budgetSlot   = budgetWindow / budgetSlots
)

// retryBudget is one producer's budget. Its methods take the time from the
// caller (the Loop's now, from the producer's Clock); they hold a mutex for a
// few integer operations and allocate nothing.
type retryBudget struct {
	percent float64 // retries per send
	floor   float64 // retries allowed per window whatever the sends

	mu        sync.Mutex
	slot      int64 // index of the current slot (now / budgetSlot)
	deposits  [budgetSlots]int64
	withdrawn [budgetSlots]int64
}

func newRetryBudget(cfg Config) *retryBudget {
	if cfg.RetryBudget <= 0 {
		return nil
	}
	return &retryBudget{percent: cfg.RetryBudget, floor: float64(cfg.RetryBudgetFloor) * budgetWindow.Seconds()}
}

// advance moves the window to now, clearing the slots that left it. Caller
// holds b.mu.
func (b *retryBudget) advance(now time.Time) int {
	cur := now.UnixNano() / int64(budgetSlot)
	if cur > b.slot {
		steps := min(cur-b.slot, budgetSlots)
		for i := int64(1); i <= steps; i++ {
			j := (b.slot + i) % budgetSlots
			b.deposits[j], b.withdrawn[j] = 0, 0
		}
		b.slot = cur
	}
	// A clock that stepped back writes into the current slot.
	return int(b.slot % budgetSlots)
}

// deposit records a send started at now.
func (b *retryBudget) deposit(now time.Time) {
	b.mu.Lock()
	b.deposits[b.advance(now)]++
	b.mu.Unlock()
}

// retryCharges records which slots one send's retries were charged to, so
// that its refund gives each back to the slot that paid for it. Only the
// window's slots are kept (counted in the slot's place, slot %
// budgetSlots): a retry charged to an older slot left the window with it.
// The zero value has no charges.
type retryCharges struct {
	last  int64 // the latest slot charged, when any was
	any   bool
	count [budgetSlots]int32
}

// add records a retry charged to slot (never earlier than the last one:
// the budget's slot only moves forward).
func (c *retryCharges) add(slot int64) {
	if !c.any {
		c.any, c.last = true, slot
	}
	if slot > c.last {
		for s := c.last + 1; s <= slot && s <= c.last+budgetSlots; s++ {
			c.count[s%budgetSlots] = 0
		}
		c.last = slot
	}
	c.count[slot%budgetSlots]++
}

// refund gives back the retries of a send that got its answer, charged as
// c says: a retry that found room elsewhere is what retries are for, and
// the budget bounds the ones that fail (gRPC's retry throttling counts
// successes back the same way). So a cluster one broker short, where most
// retries of a busy answer are stored on another broker, keeps retrying,
// while a retry storm, whose retries fail, is held to the budget.
//
// Each retry is taken off the slot it was charged to while that slot is in
// the window, and not at all once it has left (the retry left with it). So
// a refund never gives back more than the window holds of the retries it
// stands for, whenever the answer comes: no slot's count falls below the
// retries charged to it and not given back, and the window's retries stay
// within floor + percent x sends.
func (b *retryBudget) refund(now time.Time, c *retryCharges) {
	if !c.any {
		return
	}
	b.mu.Lock()
	b.advance(now)
	for s := max(c.last-budgetSlots+1, b.slot-budgetSlots+1, 0); s <= c.last; s++ {
		b.withdrawn[s%budgetSlots] -= int64(c.count[s%budgetSlots])
	}
	b.mu.Unlock()
}

// withdraw takes one retry from the budget at now, reporting false (and
// taking nothing) when the window's retries already reach floor + percent x
// sends. It returns the slot the retry was charged to, for its refund.
func (b *retryBudget) withdraw(now time.Time) (slot int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.advance(now)
	var sends, retries int64
	for j := range budgetSlots {
		sends += b.deposits[j]
		retries += b.withdrawn[j]
	}
	if float64(max(retries, 0)+1) > b.floor+b.percent*float64(sends) {
		return 0, false
	}
	b.withdrawn[i]++
	return b.slot, true
}
