package sim

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// healthyCluster is n equal brokers (4 queues each, latency 3 ms median
// and 20 ms p99) under flow control flow (FlowReject or FlowQueue with
// the families' shortest queue_wait, 100 ms) and the load model load, at
// util of the cluster's capacity. The capacity per broker is what the
// families draw at their smallest (200 sends/s), scaled down as their
// max_rate (6000 sends/s) scales a large cluster.
func healthyCluster(n int, flow string, load Load, util float64) *Scenario {
	const maxRate, perBroker = 6000, 200
	c := float64(perBroker)
	if rate := util * c * float64(n); rate > maxRate {
		c *= maxRate / rate
	}
	brokers := make([]Broker, n)
	for i := range brokers {
		brokers[i] = Broker{Name: fmt.Sprintf("broker-%02d", i+1), Queues: 4,
			Latency: Latency{Median: 3 * time.Millisecond, P99: 20 * time.Millisecond}, Capacity: c}
		if flow == FlowQueue {
			brokers[i].QueueWait = 100 * time.Millisecond
		}
	}
	sc := &Scenario{Name: fmt.Sprintf("healthy-%d-%s-%s", n, flow, load), Duration: 20 * time.Second, Seed: 1,
		Load: load, Rate: util * c * float64(n), Brokers: brokers}
	if load == LoadClosed {
		sc.Senders = 64
	}
	return sc
}

// TestHealthyEqualClustersFailNothing runs v5 on equal healthy clusters of
// 2 to 64 brokers at 95% of their capacity, under each flow-control model
// and load model: the noise of the arrivals alone (a Poisson load at a
// broker of 100 sends/s) must not make a broker fail sends, and a broker
// that refuses at once (no send queue) must never refuse: each refusal
// would make v5 isolate it for 10 s and overload the others. A send queue
// of 100 ms at 200 sends/s holds 20 sends, and a Poisson burst may wait it
// out: such a broker may answer busy, as a real one that small would.
func TestHealthyEqualClustersFailNothing(t *testing.T) {
	v5, err := SelectStrategies("v5")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 4, 16, 64} {
		for _, flow := range []string{FlowReject, FlowQueue} {
			for _, load := range []Load{LoadOpen, LoadClosed} {
				sc := healthyCluster(n, flow, load, 0.95)
				t.Run(sc.Name, func(t *testing.T) {
					t.Parallel()
					if err := sc.Validate(); err != nil {
						t.Fatal(err)
					}
					rep, err := Run(context.Background(), sc, WithStrategies(v5...))
					if err != nil {
						t.Fatal(err)
					}
					r := rep.Results[0]
					if r.Failed != 0 || (flow == FlowReject && r.BusyAnswers != 0) {
						t.Errorf("%d brokers of %.0f sends/s at 95%% (%v sends/s): v5 failed %d of %d sends, %d busy answers; want 0 and, without a send queue, 0",
							n, sc.Brokers[0].Capacity, sc.Rate, r.Failed, r.Sends, r.BusyAnswers)
					}
				})
			}
		}
	}
}
