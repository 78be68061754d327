package sim

import (
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// TestClientGoFrozenBroker holds the client-go row to what the bare
// rocketmq-client-go v2.1.2 did on the real cluster (shared/REAL-BROKER.md,
// second look: a broker frozen 20 s, 4 senders): 28 attempts of 3 s each
// to the frozen broker and 2 failed sends, each of 4 attempts to it, where
// the simulator's off (5.3.3's default, whose retry avoids the failed
// broker and whose 3 s budget one timeout uses up) predicts 28 failed. The
// scenario is the shipped frozen-broker.yaml; the bounds are the real
// figures with a margin of a few attempts (the real run's rate was about
// 170 sends/s, the scenario's 200).
func TestClientGoFrozenBroker(t *testing.T) {
	sc := loadShipped(t, "frozen-broker.yaml")
	rep := mustRun(t, sc, WithStrategies(mustSelect(t, "off", "client-go")...))
	off, cg := rep.Results[0], rep.Results[1]
	frozen := func(r Result) BrokerResult {
		for _, b := range r.Brokers {
			if b.Name == "broker-b" {
				return b
			}
		}
		t.Fatalf("%s: no broker-b", r.Name)
		return BrokerResult{}
	}
	t.Logf("off: %d failed, %d failed attempts on broker-b; client-go: %d failed, %d failed attempts on broker-b, longest send %s",
		off.Failed, frozen(off).Failures, cg.Failed, frozen(cg).Failures, cg.Latency.Max)
	if off.Failed != 28 {
		t.Errorf("off failed %d sends, want 28 (REAL-BROKER.md's prediction for 5.3.3's default)", off.Failed)
	}
	if f := frozen(cg).Failures; f < 24 || f > 32 {
		t.Errorf("client-go made %d failed attempts to the frozen broker, want about 28", f)
	}
	if cg.Failed < 1 || cg.Failed > 4 {
		t.Errorf("client-go failed %d sends, want about 2 (most sends' retries reach broker-a in time)", cg.Failed)
	}
	// A failed send made 4 attempts of 3 s, each seen a millisecond late:
	// every one went to the frozen broker, the only one that times out.
	if want := 4 * (clientGoAttemptTimeout + timeoutLag); cg.Latency.Max != want {
		t.Errorf("client-go's longest send took %s, want %s (4 attempts of 3 s to the frozen broker)", cg.Latency.Max, want)
	}
	// Each attempt to the frozen broker timed out at 3 s, not at the rest of a budget.
	if cg.Retries == 0 || cg.RetriesRefused != 0 {
		t.Errorf("client-go made %d retries (%d refused), want retries and no budget", cg.Retries, cg.RetriesRefused)
	}
}

// TestClientGoPicker: the selector is round robin over the whole route from
// the second queue (the counter is incremented before its first use), and a
// retry's last broker changes nothing.
func TestClientGoPicker(t *testing.T) {
	var qs []route.MessageQueue
	for _, b := range []string{"a", "b"} {
		for q := range 2 {
			qs = append(qs, route.MessageQueue{Topic: Topic, BrokerName: b, QueueID: q})
		}
	}
	info, err := route.NewPublishInfoFromQueues(Topic, qs)
	if err != nil {
		t.Fatal(err)
	}
	strat, err := latency.NewStrategy(latency.Reference5())
	if err != nil {
		t.Fatal(err)
	}
	defer strat.Close()
	p := ClientStrategies()[0].Picker(strat)
	want := []string{"a:1", "b:0", "b:1", "a:0", "a:1", "b:0"}
	for i, w := range want {
		pick, ok := p.Select(info, latency.PickInfo{LastBroker: "b"})
		if !ok {
			t.Fatalf("pick %d: none", i)
		}
		if got := pick.Queue.BrokerName + ":" + string(rune('0'+pick.Queue.QueueID)); got != w {
			t.Errorf("pick %d = %s, want %s (round robin, the last broker b not avoided)", i, got, w)
		}
		if pick.Reporter != nil {
			t.Errorf("pick %d reports to %v, want nothing (the client has no fault table)", i, pick.Reporter)
		}
	}
}

// TestClientGoRetryCodes: a SYSTEM_BUSY answer (code 2) fails the send at
// once (client-go's needRetryCode does not list it), where code 1
// (SYSTEM_ERROR) is retried; a refused connection is retried, possibly on
// the same broker.
func TestClientGoRetryCodes(t *testing.T) {
	run := func(ev Event) Result {
		sc := &Scenario{Name: "codes", Duration: 10 * time.Second, Seed: 1, Senders: 1, Rate: 20,
			Brokers: []Broker{
				{Name: "a", Queues: 1, Latency: Latency{Median: time.Millisecond, P99: time.Millisecond}},
				{Name: "b", Queues: 1, Latency: Latency{Median: time.Millisecond, P99: time.Millisecond}},
			},
			Events: []Event{ev}}
		return mustRun(t, sc, WithStrategies(mustSelect(t, "client-go")...)).Results[0]
	}
	busy := run(Event{Broker: "a", At: 0, For: 10 * time.Second, State: StateBusy, Rate: 1, Code: SystemBusy})
	if busy.FirstAttemptFailures == 0 || busy.Retries != 0 || busy.Failed != busy.FirstAttemptFailures {
		t.Errorf("busy: %d of %d sends failed, %d first attempts failed, %d retries; want every send whose first attempt met a to fail, no retry",
			busy.Failed, busy.Sends, busy.FirstAttemptFailures, busy.Retries)
	}
	sysErr := run(Event{Broker: "a", At: 0, For: 10 * time.Second, State: StateBusy, Rate: 1, Code: 1})
	if sysErr.FirstAttemptFailures == 0 || sysErr.Failed != 0 || sysErr.Retries != sysErr.FirstAttemptFailures {
		t.Errorf("code 1: %d of %d sends failed, %d first attempts failed, %d retries; want one retry for each failed first attempt, none failed",
			sysErr.Failed, sysErr.Sends, sysErr.FirstAttemptFailures, sysErr.Retries)
	}
	// A refused connection is retried on whichever queue comes next: with
	// one sender and a route of a, b, the retry lands on b; with a route of
	// a:0, a:1, b:0 some retries land on a again.
	sc := &Scenario{Name: "down", Duration: 10 * time.Second, Seed: 1, Senders: 1, Rate: 20,
		Brokers: []Broker{
			{Name: "a", Queues: 2, Latency: Latency{Median: time.Millisecond, P99: time.Millisecond}},
			{Name: "b", Queues: 1, Latency: Latency{Median: time.Millisecond, P99: time.Millisecond}},
		},
		Events: []Event{{Broker: "a", At: 0, For: 10 * time.Second, State: StateDown}}}
	down := mustRun(t, sc, WithStrategies(mustSelect(t, "client-go")...)).Results[0]
	if a := down.Brokers[0]; a.Failures <= down.FirstAttemptFailures || down.Failed != 0 {
		t.Errorf("down: %d failed attempts on a, %d first attempts failed, %d sends failed; want retries that went back to a, no send failed",
			a.Failures, down.FirstAttemptFailures, down.Failed)
	}
}
