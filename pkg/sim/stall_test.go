package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

const ms1 = int64(time.Millisecond)

// stallRemark is the answer to a send that waited out a stalled broker's
// send queue, as RocketMQ's BrokerFastFailure words it.
func stallRemark(wait time.Duration, queued int) string {
	return remarkQueueTimeout(wait, queued)
}

// wantBusy checks that o is a SYSTEM_BUSY answer after wait with the
// [TIMEOUT_CLEAN_QUEUE] remark naming queued sends.
func wantBusy(t *testing.T, what string, o producer.Outcome, wait time.Duration, queued int) {
	t.Helper()
	var be *producer.BrokerError
	if o.Class != latency.ClassBusy || o.Code != SystemBusy || o.Elapsed != wait || !errors.As(o.Err, &be) {
		t.Errorf("%s = %+v, want SYSTEM_BUSY after %s", what, o, wait)
		return
	}
	if want := stallRemark(wait, queued); be.Remark != want || o.Remark != want {
		t.Errorf("%s remark = %q, want %q", what, be.Remark, want)
	}
}

// TestStallNoQueue: a broker without a send queue of its own stalls with
// RocketMQ's default one (200 ms, waitTimeMillsInSendQueue). During each
// stall (every 5 s from 1 s, 500 ms long) a send waits: one that would wait
// past 200 ms is answered busy after 200 ms with an empty queue (nothing
// was ahead of it at this load); one arriving within 200 ms of the stall's
// end is served when it ends. Between stalls, and after the event, the
// broker answers as usual.
func TestStallNoQueue(t *testing.T) {
	b := testBroker(0, Event{At: time.Second, For: 10 * time.Second, State: StateStall,
		Period: 5 * time.Second, Length: 500 * time.Millisecond})
	wantBusy(t, "a send at 1.01s", mustAttempt(b, sec+10*ms1), 200*time.Millisecond, 0)
	wantBusy(t, "a send at 1.2s", mustAttempt(b, sec+200*ms1), 200*time.Millisecond, 0)
	if o := mustAttempt(b, sec+400*ms1); o.Class != latency.ClassAnswered || o.Elapsed != 102*time.Millisecond {
		t.Errorf("a send 100ms before the stall's end = %+v, want an answer after 100ms + 2ms", o)
	}
	if o := mustAttempt(b, sec+450*ms1); o.Class != latency.ClassAnswered || o.Elapsed != 52*time.Millisecond {
		t.Errorf("a second send before the stall's end = %+v, want an answer after 50ms + 2ms (no capacity: served together)", o)
	}
	for _, at := range []int64{sec + 500*ms1, 3 * sec, 6*sec + 500*ms1, 11 * sec} {
		if o := mustAttempt(b, at); o.Class != latency.ClassAnswered || o.Elapsed != 2*time.Millisecond {
			t.Errorf("a send at %s (no stall) = %+v, want an answer after 2ms", time.Duration(at), o)
		}
		if st, _ := b.stateAt(at); st != StateUp {
			t.Errorf("stateAt(%s) = %s, want up between stalls", time.Duration(at), st)
		}
	}
	wantBusy(t, "a send in the second stall", mustAttempt(b, 6*sec), 200*time.Millisecond, 0)
	if st, _ := b.stateAt(6 * sec); st != StateStall {
		t.Errorf("stateAt(6s) = %s, want stall", st)
	}
	if err := b.probe(6 * sec); err != nil {
		t.Errorf("probe during a stall = %v, want reachable (the process answers, its store does not)", err)
	}
}

// TestStallQueue: a broker serving 100 sends a second with a 200 ms send
// queue stalls from 1 s to 1.5 s. Sends arriving early in the stall wait
// 200 ms and are answered busy with the queue they found (none); two
// arriving at 1.30 s and 1.31 s are queued for the stall's end (served at
// 1.50 s and 1.51 s); one at 1.315 s would wait 205 ms and is answered busy
// with the two queued ahead of it; after the stall the queue drains at the
// broker's capacity.
func TestStallQueue(t *testing.T) {
	b := queueBroker(100, 200*time.Millisecond, Event{At: time.Second, For: 10 * time.Second, State: StateStall,
		Period: 10 * time.Second, Length: 500 * time.Millisecond})
	wantBusy(t, "a send at 1.0s", mustAttempt(b, sec), 200*time.Millisecond, 0)
	wantBusy(t, "a send at 1.1s", mustAttempt(b, sec+100*ms1), 200*time.Millisecond, 0)
	if o := mustAttempt(b, sec+300*ms1); o.Class != latency.ClassAnswered || o.Elapsed != 202*time.Millisecond {
		t.Errorf("a send at 1.30s = %+v, want an answer after 200ms + 2ms", o)
	}
	if o := mustAttempt(b, sec+310*ms1); o.Class != latency.ClassAnswered || o.Elapsed != 202*time.Millisecond {
		t.Errorf("a send at 1.31s = %+v, want an answer after 200ms + 2ms (served at 1.51s)", o)
	}
	wantBusy(t, "a send at 1.315s", mustAttempt(b, sec+315*ms1), 200*time.Millisecond, 2)
	// After the stall: the one at 1.52 s waits for the two queued (till 1.52 s): none.
	if o := mustAttempt(b, sec+520*ms1); o.Class != latency.ClassAnswered || o.Elapsed != 2*time.Millisecond {
		t.Errorf("a send at 1.52s = %+v, want an answer after 2ms (the queue has drained)", o)
	}
}

func mustAttempt(b *brokerSim, at int64) producer.Outcome {
	o, _, _ := b.attempt(at, 3*time.Second, draws{})
	return o
}

// TestStallAtLowLoad runs a stalling broker at 20 sends a second: the
// broker pushes back (busy answers, which no capacity explains: it has
// none), every strategy meets them, and the summary says what the event
// does.
func TestStallAtLowLoad(t *testing.T) {
	sc, err := Parse([]byte(`name: stall
duration: 30s
senders: 2
rate: 20
brokers:
  - {name: a, queues: 4, latency: {median: 3ms, p99: 20ms}}
  - {name: b, queues: 4, latency: {median: 3ms, p99: 20ms}}
events:
  - {broker: a, at: 5s, for: 20s, state: stall, period: 2s, length: 400ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s := sc.Summary(1); !strings.Contains(s, "stall: the store stops serving sends for 400ms of every 2s") {
		t.Errorf("Summary() = %q, want it to describe the stall", s)
	}
	rep, err := Run(context.Background(), sc, WithStrategies(mustSelect(t, "off", "v5")...))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.BusyAnswers == 0 || r.UnhealthyAttempts == 0 {
			t.Errorf("%s: %d busy answers, %d unhealthy attempts, want some of each from the stalls", r.Name, r.BusyAnswers, r.UnhealthyAttempts)
		}
	}
}

func mustSelect(t *testing.T, names ...string) []Strategy {
	t.Helper()
	s, err := SelectStrategies(names...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestParseStall checks the stall event's fields: period and length, both
// positive, the length at most the period; no other state takes a length.
func TestParseStall(t *testing.T) {
	base := `name: s
duration: 30s
senders: 1
rate: 10
brokers:
  - {name: a, queues: 1, latency: {median: 3ms, p99: 20ms}}
events:
`
	tests := []struct{ event, want string }{
		{`{broker: a, at: 1s, for: 10s, state: stall}`, "line 8: events[0].period: 0s must be positive (a stall every period)\nline 8: events[0].length: 0s must be positive (how long each stall lasts)"},
		{`{broker: a, at: 1s, for: 10s, state: stall, period: 1s, length: 2s}`, "line 8: events[0].length: 2s is longer than the period (1s)"},
		{`{broker: a, at: 1s, for: 10s, state: down, length: 2s}`, "line 8: events[0].length: only a stall event has a length, not down"},
		{`{broker: a, at: 1s, for: 10s, state: stall, period: 1s, length: 200ms, latency: {median: 1s, p99: 1s}}`, "line 8: events[0].latency: only a slow event has a latency, not stall"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(base + "  - " + tt.event + "\n"))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%s) error = %v, want %q", tt.event, err, tt.want)
		}
	}
	if _, err := Parse([]byte(base + "  - {broker: a, at: 1s, for: 10s, state: stall, period: 1s, length: 1s}\n")); err != nil {
		t.Errorf("a stall as long as its period: %v, want it accepted (stalled throughout)", err)
	}
}

// TestStallPageCacheBusy: a stall longer than RocketMQ's
// osPageCacheBusyTimeOutMills (1 s) is a page cache busy broker from its
// first second on, as BrokerFastFailure and NettyRemotingAbstract answer
// it. A broker without a send queue stalls from 1 s to 3 s: a send at
// 1.1 s waits its 200 ms and is answered [TIMEOUT_CLEAN_QUEUE]; one at
// 1.9 s is still queued at 2 s, when the store has held its lock 1 s, and
// is drained at once with [PCBUSY_CLEAN_QUEUE] after 100 ms; one at 2.5 s
// is refused at once, [REJECTREQUEST], after the broker's latency alone.
// After the stall the broker answers as usual. A stall of 1 s or less
// never reaches the page-cache answers (TestStallNoQueue).
func TestStallPageCacheBusy(t *testing.T) {
	b := testBroker(0, Event{At: time.Second, For: 10 * time.Second, State: StateStall,
		Period: 5 * time.Second, Length: 2 * time.Second})
	wantBusy(t, "a send at 1.1s", mustAttempt(b, sec+100*ms1), 200*time.Millisecond, 0)
	o := mustAttempt(b, sec+900*ms1)
	wantRemark(t, "a send at 1.9s", o, 100*time.Millisecond, "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 100ms, size of queue: 0")
	o = mustAttempt(b, 2*sec+500*ms1)
	wantRemark(t, "a send at 2.5s", o, 2*time.Millisecond, "[REJECTREQUEST]system busy, start flow control for a while")
	if o := mustAttempt(b, 3*sec+ms1); o.Class != latency.ClassAnswered || o.Elapsed != 2*time.Millisecond {
		t.Errorf("a send at 3.001s (after the stall) = %+v, want an answer after 2ms", o)
	}
	// The next stall, from 6 s, is page cache busy from 7 s on again.
	wantRemark(t, "a send at 7.2s", mustAttempt(b, 7*sec+200*ms1), 2*time.Millisecond, "[REJECTREQUEST]system busy, start flow control for a while")
	// A broker with a send queue of its own: the same answers, its
	// queue_wait in place of the default.
	q := queueBroker(100, 500*time.Millisecond, Event{At: time.Second, For: 10 * time.Second, State: StateStall,
		Period: 5 * time.Second, Length: 2 * time.Second})
	wantBusy(t, "a queued send at 1.2s", mustAttempt(q, sec+200*ms1), 500*time.Millisecond, 0)
	wantRemark(t, "a queued send at 1.7s", mustAttempt(q, sec+700*ms1), 300*time.Millisecond,
		"[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 300ms, size of queue: 0")
	wantRemark(t, "a queued send at 2.9s", mustAttempt(q, 2*sec+900*ms1), 2*time.Millisecond, "[REJECTREQUEST]system busy, start flow control for a while")
}

// wantRemark checks that o is a SYSTEM_BUSY answer after elapsed with
// remark.
func wantRemark(t *testing.T, what string, o producer.Outcome, elapsed time.Duration, remark string) {
	t.Helper()
	var be *producer.BrokerError
	if o.Class != latency.ClassBusy || o.Code != SystemBusy || o.Elapsed != elapsed || !errors.As(o.Err, &be) || be.Remark != remark || o.Remark != remark {
		t.Errorf("%s = %+v, want SYSTEM_BUSY after %s with remark %q", what, o, elapsed, remark)
	}
}
