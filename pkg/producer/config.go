package producer

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
	"github.com/mqfault/mqfault/pkg/latency"
)

// Config holds the producer's settings. Start from Reference5, Reference4 or
// DefaultConfig and change what you need; New validates it.
type Config struct {
	// RetryTimes is how many times a sync send retries after its first
	// attempt (the reference's retryTimesWhenSendFailed, 2), at most
	// MaxRetries.
	RetryTimes int
	// AsyncRetryTimes is how many times an async send retries
	// (retryTimesWhenSendAsyncFailed, 2), at most MaxRetries.
	AsyncRetryTimes int
	// Timeout is a send's whole budget, retries included (sendMsgTimeout,
	// 3 s). It is measured on the producer's Clock from the call.
	Timeout time.Duration
	// MaxTimeoutPerRequest caps one attempt's timeout while another attempt
	// remains (5.3.3's sendMsgMaxTimeoutPerRequest); 0 turns the cap off (the
	// reference's -1). The last attempt always gets what is left. When the
	// strategy's capacity model finds no other reachable broker for a retry
	// (latency.Room.AttemptElsewhere), the attempt keeps all but one cap of
	// what is left instead, and all of it when the model calls the broker
	// the only room (latency.Room.Only) or its answers average half the cap
	// or more (latency.Room.Latency). 4.9.8 has no such setting: with a v4
	// strategy it is an mqfault extension.
	MaxTimeoutPerRequest time.Duration
	// RetryAnotherBrokerWhenNotStoreOK makes a sync send whose answer is not
	// SendOK try again on another broker (the answer is still returned if no
	// later attempt is answered).
	RetryAnotherBrokerWhenNotStoreOK bool
	// RetryCodes are the broker response codes after which a sync send
	// retries. nil means the strategy mode's reference set (RetryCodes5 or
	// RetryCodes4); an empty non-nil slice means none.
	RetryCodes []int
	// AsyncMaxInFlight bounds how many async sends may be in flight at once
	// (5.3.3's backPressureForAsyncSendNum, 10000); 0 means no bound.
	AsyncMaxInFlight int
	// AsyncMaxBytes bounds the body bytes of async sends in flight
	// (backPressureForAsyncSendSize, 100 MiB); 0 means no bound.
	AsyncMaxBytes int64
	// AsyncFailFast makes SendAsync fail at once with a *LimitError when a
	// bound is reached, instead of waiting (for at most the send's budget,
	// and for as long as its ctx allows) for room, as the reference's
	// backpressure mode does.
	AsyncFailFast bool
	// RouteRefreshInterval is how often, on the Clock, the producer asks its
	// RouteSource again for every topic it knows (the reference polls the
	// name server every 30 s).
	RouteRefreshInterval time.Duration
	// RetryBudget bounds a producer's retries to this share of its sends
	// (Finagle's RetryBudget; retrybudget.go), plus RetryBudgetFloor a
	// second, over a sliding 10 s window; a retry whose send ends answered
	// is given back, so it bounds the retries that fail. 0.2 in
	// DefaultConfig. A send whose retry the budget
	// refuses ends with its last attempt's error wrapped in a
	// *RetryBudgetError (errors.Is ErrRetryBudget). 0 turns the budget off
	// (the reference's: every retry allowed); otherwise in (0, 10].
	RetryBudget float64
	// RetryBudgetFloor is how many retries a second the budget allows
	// whatever the sends, so a producer sending little can still retry. Not
	// negative.
	RetryBudgetFloor int
	// RoomWait lets up to this share of a producer's sync sends wait for
	// room (roomwait.go; the Loop documentation's "Waiting for room"): a
	// send that met push-back and would end for want of room (the no-room
	// rule, or a retry the retry budget refuses after a busy answer) waits
	// instead, until one attempt's share of its budget is left (Timeout /
	// (1 + RetryTimes)), and then makes its next attempt, while waiting
	// relieves the push-back. It trades a few sends' latency (each waits
	// about two thirds of Timeout) for the failures a fixed set of senders
	// would otherwise meet. A send ends in one result or one error whether
	// it waited or not. 0.01 in DefaultConfig; 0 turns it off (the
	// reference's); otherwise in (0, 1].
	RoomWait float64
}

// MaxRetries is the most RetryTimes and AsyncRetryTimes may be: a send's
// attempts, 1 + its retries, must fit in an int32 on every platform.
const MaxRetries = math.MaxInt32 - 1

// RetryCodes5 returns RocketMQ 5.3.3's retry response codes: TOPIC_NOT_EXIST
// (17), SERVICE_NOT_AVAILABLE (14), SYSTEM_ERROR (1), SYSTEM_BUSY (2),
// NO_PERMISSION (16), NO_BUYER_ID (204), NOT_IN_CURRENT_UNIT (205),
// GO_AWAY (1500).
func RetryCodes5() []int { return retryCodesOf(latency.ModeV5) }

// RetryCodes4 returns RocketMQ 4.9.8's retry response codes: 17, 14, 1, 16,
// 204, 205.
func RetryCodes4() []int { return retryCodesOf(latency.ModeV4) }

// retryCodesOf returns a copy of mode's retry codes (latency.SendRules).
func retryCodesOf(mode latency.Mode) []int {
	info, _ := mode.Info()
	return info.Send.RetryCodes
}

// Reference5 returns RocketMQ 5.3.3's producer defaults: 2 retries (sync and
// async), a 3 s budget, no per-attempt cap, no retry on a stored-but-not-OK
// answer, the mode's retry codes, async sends bounded to 10000 in flight and
// 100 MiB of bodies (waiting for room), routes refreshed every 30 s.
func Reference5() Config {
	return Config{
		RetryTimes:           2,
		AsyncRetryTimes:      2,
		Timeout:              3000 * time.Millisecond,
		AsyncMaxInFlight:     10000,
		AsyncMaxBytes:        100 << 20,
		RouteRefreshInterval: 30 * time.Second,
	}
}

// Reference4 returns RocketMQ 4.9.8's producer defaults, which are 5.3.3's
// (4.9.8 has no per-attempt cap, and its async sends are bounded by an
// executor queue instead; mqfault keeps the 5.3.3 bound).
func Reference4() Config { return Reference5() }

// DefaultConfig returns the recommended settings: Reference5 with the
// per-attempt cap on at 1 s, so a slow broker cannot use the whole 3 s budget
// and leave nothing for a retry elsewhere; the retry budget at a fifth of
// the sends plus 10 retries a second; and 1% of sync sends allowed to wait
// for room.
func DefaultConfig() Config {
	c := Reference5()
	c.MaxTimeoutPerRequest = time.Second
	c.RetryBudget = 0.2
	c.RetryBudgetFloor = 10
	c.RoomWait = 0.01
	return c
}

// Validate checks every setting and returns nil, or one *ConfigError per
// problem joined with errors.Join (errors.As finds the first; the message
// has one problem per line).
func (c Config) Validate() error {
	var l configerr.List
	if c.RetryTimes < 0 {
		l.Add(invalid("RetryTimes", c.RetryTimes, "must not be negative"))
	} else if c.RetryTimes > MaxRetries {
		l.Add(invalid("RetryTimes", c.RetryTimes, retriesTooMany))
	}
	if c.AsyncRetryTimes < 0 {
		l.Add(invalid("AsyncRetryTimes", c.AsyncRetryTimes, "must not be negative"))
	} else if c.AsyncRetryTimes > MaxRetries {
		l.Add(invalid("AsyncRetryTimes", c.AsyncRetryTimes, retriesTooMany))
	}
	if c.Timeout <= 0 {
		l.Add(invalid("Timeout", c.Timeout, "must be positive"))
	}
	if c.MaxTimeoutPerRequest < 0 {
		l.Add(invalid("MaxTimeoutPerRequest", c.MaxTimeoutPerRequest, "must not be negative (0 turns the cap off)"))
	}
	if c.AsyncMaxInFlight < 0 {
		l.Add(invalid("AsyncMaxInFlight", c.AsyncMaxInFlight, "must not be negative (0 means no bound)"))
	}
	if c.AsyncMaxBytes < 0 {
		l.Add(invalid("AsyncMaxBytes", c.AsyncMaxBytes, "must not be negative (0 means no bound)"))
	}
	if !(c.RetryBudget >= 0 && c.RetryBudget <= 10) {
		l.Add(invalid("RetryBudget", c.RetryBudget, "must be in [0, 10] retries per send (0 turns the budget off)"))
	}
	if c.RetryBudgetFloor < 0 {
		l.Add(invalid("RetryBudgetFloor", c.RetryBudgetFloor, "must not be negative"))
	}
	if !(c.RoomWait >= 0 && c.RoomWait <= 1) {
		l.Add(invalid("RoomWait", c.RoomWait, "must be in [0, 1] waits per sync send (0 turns waiting for room off)"))
	}
	if c.RouteRefreshInterval <= 0 {
		l.Add(invalid("RouteRefreshInterval", c.RouteRefreshInterval, "must be positive"))
	}
	return l.Err()
}

var retriesTooMany = "must be at most " + strconv.Itoa(MaxRetries) + " (1 + retries attempts must fit in an int32)"

// Policy is a Config resolved for a strategy mode: the immutable rules every
// Loop of a producer follows, and the producer's retry budget and room-wait
// allowance (one each per Policy: the Loops sharing a Policy share them). It is safe for concurrent use.
type Policy struct {
	mode         latency.Mode
	rules        modeRules // the mode's send-loop rules (moderules.go)
	retryTimes   int
	asyncRetries int
	timeout      time.Duration
	perRequest   time.Duration
	retryAnother bool
	codes        []int        // sorted, distinct
	budget       *retryBudget // nil unless Config.RetryBudget is on; shared by the producer's sends
	wait         *roomWait    // nil unless Config.RoomWait is on; shared by the producer's sends
}

// NewPolicy validates cfg and resolves it for mode (a registered latency
// mode, latency.ModeV5 or latency.ModeV4; "" is v5): the mode's
// latency.SendRules give the default retry codes and the send loop's other
// mode rules (whether a sync retry resets the route index, whether an async
// retry checks the budget, what each class does); the fault updates are the
// strategy's (latency.UpdateFor).
func NewPolicy(cfg Config, mode latency.Mode) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rules, ok := rulesFor(mode)
	if !ok {
		return nil, invalid("mode", string(mode), "must be "+latency.ModeChoices())
	}
	codes := cfg.RetryCodes
	if codes == nil {
		codes = rules.retryCodes
	}
	codes = slices.Clone(codes)
	slices.Sort(codes)
	return &Policy{
		mode:         rules.mode,
		rules:        rules,
		retryTimes:   cfg.RetryTimes,
		asyncRetries: cfg.AsyncRetryTimes,
		timeout:      cfg.Timeout,
		perRequest:   cfg.MaxTimeoutPerRequest,
		retryAnother: cfg.RetryAnotherBrokerWhenNotStoreOK,
		codes:        slices.Compact(codes),
		budget:       newRetryBudget(cfg),
		wait:         newRoomWait(cfg),
	}, nil
}

// Mode returns the mode whose rules the policy follows.
func (p *Policy) Mode() latency.Mode { return p.mode }

// Timeout returns a send's budget.
func (p *Policy) Timeout() time.Duration { return p.timeout }

// IsRetryCode reports whether a sync send retries after a broker error with
// this response code.
func (p *Policy) IsRetryCode(code int) bool {
	_, ok := slices.BinarySearch(p.codes, code)
	return ok
}

// MaxAttempts returns how many attempts a send of kind may make at most.
func (p *Policy) MaxAttempts(kind Kind) int {
	switch kind {
	case KindSync:
		return 1 + p.retryTimes
	case KindAsync:
		return 1 + p.asyncRetries
	}
	return 1
}
