package rocketmqgo_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// attemptCounter counts the send loop's attempts, and those on a queue the
// client's list does not have.
type attemptCounter struct {
	mqproducer.NopObserver
	all, missed atomic.Int64
}

func (a *attemptCounter) OnAttempt(ev mqproducer.AttemptEvent) {
	a.all.Add(1)
	if errors.Is(ev.Outcome.Err, rocketmqgo.ErrQueueNotInRoute) {
		a.missed.Add(1)
	}
}

// TestE2EDuplicateBrokerEntry has the name server list broker-a's queue
// data twice. The real client then passes its selector a:0..3 a:0..3
// b:0..3; every pick must be a queue of that list, so each of 200 sends is
// stored at its first attempt, and the brokers store all of them.
func TestE2EDuplicateBrokerEntry(t *testing.T) {
	obs := &attemptCounter{}
	c := newCluster(t, []string{"broker-a", "broker-b"}, nil,
		rocketmqgo.WithProducerOptions(mqproducer.WithObserver(obs)))
	r := remotingtest.RouteOf(4, c.brokers["broker-a"], c.brokers["broker-b"])
	r.Queues = append(r.Queues, r.Queues[0])
	if err := c.ns.SetRoute(e2eTopic, r); err != nil {
		t.Fatalf("SetRoute() error = %v", err)
	}
	const sends = 200
	msgs := c.sendN(sends)
	if all, missed := obs.all.Load(), obs.missed.Load(); all != sends || missed != 0 {
		t.Errorf("%d sends took %d attempts, %d on a queue the client does not have; want %d attempts, none missed",
			sends, all, missed, sends)
	}
	for _, name := range []string{"broker-a", "broker-b"} {
		if len(c.brokers[name].Sends()) == 0 {
			t.Errorf("%s read no send, want both brokers used", name)
		}
	}
	c.checkNothingLost(msgs)
}
