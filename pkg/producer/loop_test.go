package producer

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

var t0 = time.UnixMilli(1_000_000)

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func mustPolicy(t testing.TB, cfg Config, mode latency.Mode) *Policy {
	t.Helper()
	p, err := NewPolicy(cfg, mode)
	if err != nil {
		t.Fatalf("NewPolicy() error = %v", err)
	}
	return p
}

func queue(b string) route.MessageQueue { return route.MessageQueue{Topic: "T", BrokerName: b} }

// newLoop, start and finish step a Loop by hand, as a Drive does with a
// pick of its own (the tests here script the picked broker).
func newLoop(p *Policy, kind Kind, topic string, begin time.Time) Loop {
	var l Loop
	l.init(p, kind, topic, begin, nil)
	return l
}

func (l *Loop) start(q route.MessageQueue, now time.Time) (Plan, bool) {
	var plan Plan
	ok := l.begin(&q, now, &plan)
	return plan, ok
}

func (l *Loop) finish(o Outcome) decision {
	d := l.decide(&o)
	d.Retry = l.settle(d)
	return d
}

// loopStep is one attempt of a scripted loop: the broker picked, what the
// attempt meets, and what the loop must decide.
type loopStep struct {
	broker   string
	out      Outcome // Elapsed is the attempt's latency
	dispatch bool    // async: report Dispatched before the outcome

	wantPick   latency.PickInfo
	wantUpdate FaultUpdate // Broker and Latency are filled in from the step
	wantRetry  bool
}

// drive runs steps through l, checking every decision, and returns the time
// the loop ended at. It fails when the loop stops before the steps run out.
func drive(t *testing.T, l *Loop, steps []loopStep, detector bool) time.Time {
	t.Helper()
	now := t0
	for i, s := range steps {
		pi, ok := l.next(now)
		if !ok {
			t.Fatalf("step %d: Next() = false, want an attempt", i)
		}
		want := s.wantPick
		if i > 0 {
			want.LastClass = steps[i-1].out.Class // a retry says what the attempt before met
		}
		if pi != want {
			t.Errorf("step %d: Next() = %+v, want %+v", i, pi, want)
		}
		plan, ok := l.start(queue(s.broker), now)
		if !ok {
			t.Fatalf("step %d: Start() = false, want an attempt", i)
		}
		if plan.Attempt != i {
			t.Errorf("step %d: plan.Attempt = %d", i, plan.Attempt)
		}
		if s.dispatch {
			l.dispatched(0)
		}
		d := l.finish(s.out)
		wantUp := s.wantUpdate
		wantUp.Broker, wantUp.Latency = s.broker, s.out.Elapsed
		// The update the strategy's rules make of what the loop reports.
		if got := latency.UpdateFor(l.p.mode, s.broker, d.Report, detector); got != wantUp {
			t.Errorf("step %d: Finish().Report = %+v: update %+v, want %+v", i, d.Report, got, wantUp)
		}
		if d.Retry != s.wantRetry {
			t.Errorf("step %d: Finish().Retry = %v, want %v", i, d.Retry, s.wantRetry)
		}
		now = now.Add(s.out.Elapsed)
	}
	return now
}

func answered(st SendStatus, lat int64) Outcome {
	return Outcome{Class: latency.ClassAnswered, Result: Result{Status: st}, Elapsed: ms(lat)}
}

func failed(err error, lat int64) Outcome {
	o := Classify(Result{}, err)
	o.Elapsed = ms(lat)
	return o
}

var (
	errClient    = &ClientError{Broker: "x", Err: errors.New("no address")}
	errTransport = &TransportError{Broker: "x", Class: latency.ClassTransportTimeout, Err: errors.New("timeout")}
	errNotSent   = &TransportError{Broker: "x", Class: latency.ClassTransportNotSent, Err: errors.New("refused")}
	errOverload  = &TransportError{Broker: "x", Class: latency.ClassThrottled, Err: errors.New("busy")}
	errRetryCode = &BrokerError{Broker: "x", Code: 2}  // a retry code in v5 only
	errRetryBoth = &BrokerError{Broker: "x", Code: 17} // a retry code in both modes
	errNoRetry   = &BrokerError{Broker: "x", Code: 999}
)

func up(iso, reach bool) FaultUpdate { return FaultUpdate{Isolation: iso, Reachable: reach} }

var (
	first  = latency.PickInfo{}
	retry5 = func(last string) latency.PickInfo { return latency.PickInfo{LastBroker: last, ResetIndex: true} }
	retry4 = func(last string) latency.PickInfo { return latency.PickInfo{LastBroker: last} }
)

// TestLoopSync drives the sync loop through scripted outcomes in both modes
// and checks every pick, fault update, retry decision and the end.
func TestLoopSync(t *testing.T) {
	tests := []struct {
		name        string
		mode        latency.Mode
		cfg         func(*Config)
		detector    bool
		steps       []loopStep
		wantStop    Stop
		wantStatus  SendStatus
		wantErr     error // errors.Is target; nil when answered
		wantBrokers []string
	}{
		{
			name:     "v5 ok first",
			steps:    []loopStep{{broker: "A", out: answered(SendOK, 10), wantPick: first, wantUpdate: up(false, true)}},
			wantStop: StopAnswered, wantStatus: SendOK, wantBrokers: []string{"A"},
		},
		{
			name: "v5 transport then ok",
			steps: []loopStep{
				{broker: "A", out: failed(errTransport, 50), wantPick: first, wantUpdate: up(true, true), wantRetry: true},
				{broker: "B", out: answered(SendOK, 20), wantPick: retry5("A"), wantUpdate: up(false, true)},
			},
			wantStop: StopAnswered, wantBrokers: []string{"A", "B"},
		},
		{
			name: "v5 transport with detector on marks unreachable", detector: true,
			steps: []loopStep{
				{broker: "A", out: failed(errTransport, 50), wantPick: first, wantUpdate: up(true, false), wantRetry: true},
				{broker: "B", out: answered(SendOK, 20), wantPick: retry5("A"), wantUpdate: up(false, true)},
			},
			wantStop: StopAnswered, wantBrokers: []string{"A", "B"},
		},
		{
			name: "v5 client errors exhaust the attempts",
			steps: []loopStep{
				{broker: "A", out: failed(errClient, 1), wantPick: first, wantUpdate: up(false, true), wantRetry: true},
				{broker: "B", out: failed(errClient, 1), wantPick: retry5("A"), wantUpdate: up(false, true), wantRetry: true},
				{broker: "C", out: failed(errClient, 1), wantPick: retry5("B"), wantUpdate: up(false, true), wantRetry: true},
			},
			wantStop: StopFailed, wantErr: errClient, wantBrokers: []string{"A", "B", "C"},
		},
		{
			name: "v5 retry code then no-retry code throws",
			steps: []loopStep{
				{broker: "A", out: failed(errRetryCode, 30), wantPick: first, wantUpdate: up(true, false), wantRetry: true},
				{broker: "B", out: failed(errNoRetry, 30), wantPick: retry5("A"), wantUpdate: up(true, false)},
			},
			wantStop: StopBrokerError, wantErr: errNoRetry, wantBrokers: []string{"A", "B"},
		},
		{
			name: "v5 no-retry code after a not-OK answer returns the answer",
			cfg:  func(c *Config) { c.RetryAnotherBrokerWhenNotStoreOK = true },
			steps: []loopStep{
				{broker: "A", out: answered(FlushDiskTimeout, 5), wantPick: first, wantUpdate: up(false, true), wantRetry: true},
				{broker: "B", out: failed(errNoRetry, 5), wantPick: retry5("A"), wantUpdate: up(true, false)},
			},
			wantStop: StopAnswered, wantStatus: FlushDiskTimeout, wantBrokers: []string{"A", "B"},
		},
		{
			name:     "v5 not-OK answer returned without retry-another-broker",
			steps:    []loopStep{{broker: "A", out: answered(FlushSlaveTimeout, 5), wantPick: first, wantUpdate: up(false, true)}},
			wantStop: StopAnswered, wantStatus: FlushSlaveTimeout, wantBrokers: []string{"A"},
		},
		{
			name: "v5 last of three not-OK answers is returned",
			cfg:  func(c *Config) { c.RetryAnotherBrokerWhenNotStoreOK = true },
			steps: []loopStep{
				{broker: "A", out: answered(FlushDiskTimeout, 5), wantPick: first, wantUpdate: up(false, true), wantRetry: true},
				{broker: "B", out: answered(FlushSlaveTimeout, 5), wantPick: retry5("A"), wantUpdate: up(false, true), wantRetry: true},
				{broker: "C", out: answered(SlaveNotAvailable, 5), wantPick: retry5("B"), wantUpdate: up(false, true), wantRetry: true},
			},
			wantStop: StopAnswered, wantStatus: SlaveNotAvailable, wantBrokers: []string{"A", "B", "C"},
		},
		{
			name: "v5 cancelled after an answer still throws",
			cfg:  func(c *Config) { c.RetryAnotherBrokerWhenNotStoreOK = true },
			steps: []loopStep{
				{broker: "A", out: answered(FlushDiskTimeout, 5), wantPick: first, wantUpdate: up(false, true), wantRetry: true},
				{broker: "B", out: failed(ErrInterrupted, 5), wantPick: retry5("A"), wantUpdate: up(false, true)},
			},
			wantStop: StopCancelled, wantErr: ErrInterrupted, wantBrokers: []string{"A", "B"},
		},
		{
			name: "v4 updates carry isolation only and retries never reset",
			mode: latency.ModeV4,
			steps: []loopStep{
				{broker: "A", out: failed(errClient, 5), wantPick: first, wantUpdate: up(true, true), wantRetry: true},
				{broker: "B", out: failed(errTransport, 5), wantPick: retry4("A"), wantUpdate: up(true, true), wantRetry: true},
				{broker: "C", out: failed(errRetryBoth, 5), wantPick: retry4("B"), wantUpdate: up(true, true), wantRetry: true},
			},
			wantStop: StopFailed, wantErr: errRetryBoth, wantBrokers: []string{"A", "B", "C"},
		},
		{
			name: "v4 code 2 is not a retry code", mode: latency.ModeV4,
			steps:    []loopStep{{broker: "A", out: failed(errRetryCode, 5), wantPick: first, wantUpdate: up(true, true)}},
			wantStop: StopBrokerError, wantErr: errRetryCode, wantBrokers: []string{"A"},
		},
		{
			name: "v4 cancelled", mode: latency.ModeV4,
			steps:    []loopStep{{broker: "A", out: failed(ErrInterrupted, 5), wantPick: first, wantUpdate: up(false, true)}},
			wantStop: StopCancelled, wantErr: ErrInterrupted, wantBrokers: []string{"A"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Reference5()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			mode := tt.mode
			if mode == "" {
				mode = latency.ModeV5
			}
			l := newLoop(mustPolicy(t, cfg, mode), KindSync, "T", t0)
			end := drive(t, &l, tt.steps, tt.detector)
			if _, ok := l.next(end); ok {
				t.Fatalf("Next() = true after the scripted steps, want the send over")
			}
			if l.Stop() != tt.wantStop {
				t.Errorf("Stop() = %v, want %v", l.Stop(), tt.wantStop)
			}
			res, err := l.Result()
			if tt.wantErr == nil {
				if err != nil || res.Status != tt.wantStatus {
					t.Errorf("Result() = %v, %v, want status %v", res.Status, err, tt.wantStatus)
				}
			} else {
				var se *SendError
				if !errors.As(err, &se) || !errors.Is(err, tt.wantErr) {
					t.Fatalf("Result() error = %v, want a *SendError wrapping %v", err, tt.wantErr)
				}
				if se.Attempts != len(tt.steps) || !slices.Equal(se.Brokers, tt.wantBrokers) || se.Stop != tt.wantStop {
					t.Errorf("SendError = %+v, want %d attempts on %v", se, len(tt.steps), tt.wantBrokers)
				}
				if se.Elapsed != end.Sub(t0) {
					t.Errorf("SendError.Elapsed = %v, want %v", se.Elapsed, end.Sub(t0))
				}
			}
			if got := l.BrokersSent(); !slices.Equal(got, tt.wantBrokers) {
				t.Errorf("BrokersSent() = %v, want %v", got, tt.wantBrokers)
			}
		})
	}
}

// TestLoopBudget checks the budget check of sync attempts: strictly more
// than Timeout stops the send (after recording the picked broker), exactly
// Timeout still makes an attempt with a zero timeout.
func TestLoopBudget(t *testing.T) {
	tests := []struct {
		name         string
		answerFirst  bool
		firstLatency int64
		wantStart    bool
		wantStop     Stop
	}{
		{name: "over budget, no answer", firstLatency: 3001, wantStop: StopCallTimeout},
		{name: "over budget after an answer", answerFirst: true, firstLatency: 3001, wantStop: StopAnswered},
		{name: "budget exactly spent", firstLatency: 3000, wantStart: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Reference5()
			cfg.RetryAnotherBrokerWhenNotStoreOK = true
			l := newLoop(mustPolicy(t, cfg, latency.ModeV5), KindSync, "T", t0)
			l.next(t0)
			l.start(queue("A"), t0)
			o := failed(errTransport, tt.firstLatency)
			if tt.answerFirst {
				o = answered(FlushDiskTimeout, tt.firstLatency)
			}
			l.finish(o)
			now := t0.Add(ms(tt.firstLatency))
			if _, ok := l.next(now); !ok {
				t.Fatal("Next() = false, want a pick")
			}
			plan, ok := l.start(queue("B"), now)
			if ok != tt.wantStart {
				t.Fatalf("Start() = %v, want %v", ok, tt.wantStart)
			}
			if got := l.BrokersSent(); !slices.Equal(got, []string{"A", "B"}) {
				t.Errorf("BrokersSent() = %v, want [A B]", got)
			}
			if tt.wantStart {
				if plan.Timeout != 0 || !plan.Deadline.Equal(now) {
					t.Errorf("Start() plan = %+v, want a zero timeout", plan)
				}
				return
			}
			if l.Stop() != tt.wantStop {
				t.Errorf("Stop() = %v, want %v", l.Stop(), tt.wantStop)
			}
			_, err := l.Result()
			if got := errors.Is(err, ErrCallTimeout); got != (tt.wantStop == StopCallTimeout) {
				t.Errorf("errors.Is(%v, ErrCallTimeout) = %v", err, got)
			}
			var se *SendError
			if errors.As(err, &se) && (se.Attempts != 1 || !slices.Equal(se.Brokers, []string{"A"}) || !errors.Is(err, errTransport)) {
				t.Errorf("SendError = %+v, want 1 attempt on [A] wrapping the transport error", se)
			}
		})
	}
}

// TestLoopPerRequestCap checks 5.3.3's sendMsgMaxTimeoutPerRequest: each
// attempt's timeout is the budget left, capped while another attempt
// remains; the last attempt gets all that is left.
func TestLoopPerRequestCap(t *testing.T) {
	tests := []struct {
		name string
		cap  time.Duration
		want []time.Duration // each attempt's timeout; every attempt takes 700 ms
	}{
		{name: "off", cap: 0, want: []time.Duration{ms(3000), ms(2300), ms(1600)}},
		{name: "1s", cap: time.Second, want: []time.Duration{ms(1000), ms(1000), ms(1600)}},
		{name: "above the budget", cap: 5 * time.Second, want: []time.Duration{ms(3000), ms(2300), ms(1600)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Reference5()
			cfg.MaxTimeoutPerRequest = tt.cap
			l := newLoop(mustPolicy(t, cfg, latency.ModeV5), KindSync, "T", t0)
			now := t0
			for i, want := range tt.want {
				l.next(now)
				plan, ok := l.start(queue("A"), now)
				if !ok {
					t.Fatalf("attempt %d: Start() = false", i)
				}
				if plan.Timeout != want || !plan.Deadline.Equal(now.Add(want)) {
					t.Errorf("attempt %d: Timeout = %v, Deadline = %v, want %v", i, plan.Timeout, plan.Deadline, want)
				}
				l.finish(failed(errTransport, 700))
				now = now.Add(ms(700))
			}
		})
	}
}

// TestLoopAsync checks the async path: the first attempt's dispatch update,
// the response rules, the retries' picks (failed broker as last, no reset)
// and the failures before dispatch.
func TestLoopAsync(t *testing.T) {
	noReset := func(last string) latency.PickInfo { return latency.PickInfo{LastBroker: last} }
	tests := []struct {
		name     string
		mode     latency.Mode
		steps    []loopStep
		wantStop Stop
		wantErr  error
	}{
		{
			name:     "answered",
			steps:    []loopStep{{broker: "A", dispatch: true, out: answered(FlushDiskTimeout, 20), wantPick: first, wantUpdate: up(false, true)}},
			wantStop: StopAnswered,
		},
		{
			name:     "broker error is not retried",
			steps:    []loopStep{{broker: "A", dispatch: true, out: failed(errRetryCode, 20), wantPick: first, wantUpdate: up(true, true)}},
			wantStop: StopBrokerError, wantErr: errRetryCode,
		},
		{
			name: "transport errors retry avoiding the failed broker",
			steps: []loopStep{
				{broker: "A", dispatch: true, out: failed(errTransport, 20), wantPick: first, wantUpdate: up(true, true), wantRetry: true},
				{broker: "B", dispatch: true, out: failed(errNotSent, 20), wantPick: noReset("A"), wantUpdate: up(true, false), wantRetry: true},
				{broker: "C", dispatch: true, out: failed(errTransport, 20), wantPick: noReset("B"), wantUpdate: up(true, true), wantRetry: true},
			},
			wantStop: StopFailed, wantErr: errTransport,
		},
		{
			name:     "v5 overloaded is not retried",
			steps:    []loopStep{{broker: "A", dispatch: true, out: failed(errOverload, 20), wantPick: first, wantUpdate: up(true, true)}},
			wantStop: StopFailed, wantErr: errOverload,
		},
		{
			name: "v4 overloaded is retried", mode: latency.ModeV4,
			steps: []loopStep{
				{broker: "A", dispatch: true, out: failed(errOverload, 20), wantPick: first, wantUpdate: up(true, true), wantRetry: true},
				{broker: "B", dispatch: true, out: answered(SendOK, 20), wantPick: noReset("A"), wantUpdate: up(false, true)},
			},
			wantStop: StopAnswered,
		},
		{
			name:     "client error on the first attempt ends the send",
			steps:    []loopStep{{broker: "A", dispatch: true, out: failed(errClient, 20), wantPick: first, wantUpdate: up(false, true)}},
			wantStop: StopFailed, wantErr: errClient,
		},
		{
			name: "client error on a retry is a dispatch failure",
			steps: []loopStep{
				{broker: "A", dispatch: true, out: failed(errTransport, 20), wantPick: first, wantUpdate: up(true, true), wantRetry: true},
				{broker: "B", dispatch: true, out: failed(errClient, 20), wantPick: noReset("A"), wantUpdate: up(true, false), wantRetry: true},
				{broker: "C", out: failed(errTransport, 20), wantPick: noReset("B"), wantUpdate: up(true, false), wantRetry: true},
			},
			wantStop: StopFailed, wantErr: errTransport,
		},
		{
			name:     "transport error before dispatch follows sendDefaultImpl",
			steps:    []loopStep{{broker: "A", out: failed(errTransport, 20), wantPick: first, wantUpdate: up(true, true)}},
			wantStop: StopFailed, wantErr: errTransport,
		},
		{
			name:     "no-retry broker error before dispatch throws",
			steps:    []loopStep{{broker: "A", out: failed(errNoRetry, 20), wantPick: first, wantUpdate: up(true, false)}},
			wantStop: StopBrokerError, wantErr: errNoRetry,
		},
		{
			name:     "cancelled",
			steps:    []loopStep{{broker: "A", dispatch: true, out: failed(ErrInterrupted, 20), wantPick: first, wantUpdate: up(false, true)}},
			wantStop: StopCancelled, wantErr: ErrInterrupted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode := tt.mode
			if mode == "" {
				mode = latency.ModeV5
			}
			l := newLoop(mustPolicy(t, Reference5(), mode), KindAsync, "T", t0)
			end := drive(t, &l, tt.steps, false)
			if _, ok := l.next(end); ok {
				t.Fatal("Next() = true, want the send over")
			}
			if l.Stop() != tt.wantStop {
				t.Errorf("Stop() = %v, want %v", l.Stop(), tt.wantStop)
			}
			if _, err := l.Result(); (tt.wantErr == nil) != (err == nil) || (err != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("Result() error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestLoopAsyncDispatchUpdate checks that only the first async attempt has a
// dispatch update, once.
func TestLoopAsyncDispatchUpdate(t *testing.T) {
	l := newLoop(mustPolicy(t, Reference5(), latency.ModeV5), KindAsync, "T", t0)
	l.next(t0)
	l.start(queue("A"), t0)
	o, ok := l.dispatched(ms(3))
	if want := (FaultUpdate{Broker: "A", Latency: ms(3), Reachable: true}); !ok || latency.UpdateFor(latency.ModeV5, "A", o, true) != want {
		t.Errorf("Dispatched() = %+v, %v, want the update %+v, true", o, ok, want)
	}
	if _, ok := l.dispatched(ms(3)); ok {
		t.Error("second Dispatched() = true, want false")
	}
	l.finish(failed(errTransport, 10))
	l.next(t0.Add(ms(10)))
	l.start(queue("B"), t0.Add(ms(10)))
	if u, ok := l.dispatched(0); ok {
		t.Errorf("Dispatched() on a retry = %+v, true, want false", u)
	}
	sync := newLoop(mustPolicy(t, Reference5(), latency.ModeV5), KindSync, "T", t0)
	sync.next(t0)
	sync.start(queue("A"), t0)
	if _, ok := sync.dispatched(0); ok {
		t.Error("Dispatched() on a sync send = true, want false")
	}
}

// TestLoopAsyncBudget checks that a v5 async retry needs budget left, and a
// v4 one does not; the retry's timeout is what is left, never negative.
func TestLoopAsyncBudget(t *testing.T) {
	tests := []struct {
		name      string
		mode      latency.Mode
		latency   int64
		wantRetry bool
		wantLeft  time.Duration
	}{
		{name: "v5 budget left", mode: latency.ModeV5, latency: 2999, wantRetry: true, wantLeft: ms(1)},
		{name: "v5 budget spent", mode: latency.ModeV5, latency: 3000},
		{name: "v4 ignores the budget", mode: latency.ModeV4, latency: 3500, wantRetry: true, wantLeft: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLoop(mustPolicy(t, Reference5(), tt.mode), KindAsync, "T", t0)
			l.next(t0)
			l.start(queue("A"), t0)
			l.dispatched(0)
			if d := l.finish(failed(errTransport, tt.latency)); !d.Retry {
				t.Fatalf("Finish().Retry = false, want true")
			}
			now := t0.Add(ms(tt.latency))
			_, ok := l.next(now)
			if ok != tt.wantRetry {
				t.Fatalf("Next() = %v, want %v", ok, tt.wantRetry)
			}
			if !ok {
				if l.Stop() != StopFailed || errors.Is(func() error { _, err := l.Result(); return err }(), ErrCallTimeout) {
					t.Errorf("Stop() = %v, want failed (not a call timeout)", l.Stop())
				}
				return
			}
			plan, ok := l.start(queue("B"), now)
			if !ok || plan.Timeout != tt.wantLeft {
				t.Errorf("Start() = %+v, %v, want timeout %v", plan, ok, tt.wantLeft)
			}
		})
	}
}

// TestLoopOneway checks the one attempt of a oneway send.
func TestLoopOneway(t *testing.T) {
	for _, tt := range []struct {
		name     string
		out      Outcome
		want     FaultUpdate
		wantStop Stop
	}{
		{"ok", answered(SendOK, 4), up(false, true), StopAnswered},
		{"transport", failed(errTransport, 4), up(true, true), StopFailed},
		{"client", failed(errClient, 4), up(false, true), StopFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLoop(mustPolicy(t, Reference5(), latency.ModeV5), KindOneway, "T", t0)
			drive(t, &l, []loopStep{{broker: "A", out: tt.out, wantPick: first, wantUpdate: tt.want, wantRetry: tt.wantStop != StopAnswered}}, false)
			if _, ok := l.next(t0); ok || l.Stop() != tt.wantStop || l.Attempts() != 1 {
				t.Errorf("after one attempt: Next() = %v, Stop() = %v, Attempts() = %d, want false, %v, 1", ok, l.Stop(), l.Attempts(), tt.wantStop)
			}
		})
	}
}

// TestLoopMisuse checks that calls out of order do nothing and never panic.
func TestLoopMisuse(t *testing.T) {
	l := newLoop(nil, Kind(9), "T", t0)
	if l.Kind() != KindSync {
		t.Errorf("Kind() = %v, want SYNC for an unknown kind", l.Kind())
	}
	if _, ok := l.start(queue("A"), t0); ok {
		t.Error("Start() before Next() = true")
	}
	if d := l.finish(answered(SendOK, 1)); d != (decision{}) {
		t.Errorf("Finish() before Start() = %+v", d)
	}
	if _, err := l.Result(); err == nil {
		t.Error("Result() of a running loop: nil error")
	}
	l.next(t0)
	if _, ok := l.next(t0); !ok {
		t.Error("second Next() before Start() = false, want the same answer")
	}
	l.start(queue("A"), t0)
	l.finish(Outcome{Class: latency.ClassBroker, Code: 999}) // no Err: the loop makes one
	_, err := l.Result()
	var be *BrokerError
	if !errors.As(err, &be) || be.Code != 999 {
		t.Errorf("Result() error = %v, want a BrokerError with code 999", err)
	}
	l.abort(ErrClosed)
	if l.Stop() != StopBrokerError {
		t.Errorf("Abort() after the end changed Stop() to %v", l.Stop())
	}
}

// TestLoopAbort checks Abort with and without an earlier answer.
func TestLoopAbort(t *testing.T) {
	cfg := Reference5()
	cfg.RetryAnotherBrokerWhenNotStoreOK = true
	l := newLoop(mustPolicy(t, cfg, latency.ModeV5), KindSync, "T", t0)
	l.abort(ErrClosed)
	if _, err := l.Result(); l.Stop() != StopAborted || !errors.Is(err, ErrClosed) {
		t.Errorf("Abort(): Stop() = %v, err = %v, want aborted with ErrClosed", l.Stop(), err)
	}
	l = newLoop(mustPolicy(t, cfg, latency.ModeV5), KindSync, "T", t0)
	drive(t, &l, []loopStep{{broker: "A", out: answered(FlushDiskTimeout, 1), wantPick: first, wantUpdate: up(false, true), wantRetry: true}}, false)
	l.abort(ErrClosed)
	if res, err := l.Result(); err != nil || res.Status != FlushDiskTimeout {
		t.Errorf("Abort() after an answer: Result() = %v, %v, want the answer", res.Status, err)
	}
}

// TestLoopManyBrokers checks brokersSent past the inline buffer.
func TestLoopManyBrokers(t *testing.T) {
	cfg := Reference5()
	cfg.RetryTimes = 6
	l := newLoop(mustPolicy(t, cfg, latency.ModeV5), KindSync, "T", t0)
	var want []string
	for i := range 7 {
		b := string(rune('A' + i))
		want = append(want, b)
		l.next(t0)
		l.start(queue(b), t0)
		l.finish(failed(errTransport, 1))
	}
	l.next(t0)
	if got := l.BrokersSent(); !slices.Equal(got, want) {
		t.Errorf("BrokersSent() = %v, want %v", got, want)
	}
	_, err := l.Result()
	var se *SendError
	if !errors.As(err, &se) || !slices.Equal(se.Brokers, want) || se.Attempts != 7 {
		t.Errorf("Result() error = %v, want 7 attempts on %v", err, want)
	}
}
