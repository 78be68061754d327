package wire_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	mqwire "github.com/mqfault/mqfault/wire"
)

// answering builds a producer named name on reg whose sends all succeed.
func answering(t *testing.T, reg prometheus.Registerer, name string) (*producer.Producer, func(), error) {
	t.Helper()
	var routes producer.StaticRoutes
	routes.SetQueues("T", map[string]int{"a": 2, "b": 2})
	tr := producer.TransportFunc(func(context.Context, producer.Attempt) (producer.Result, error) {
		return producer.Result{MsgID: "id"}, nil
	})
	return mqwire.NewObservedProducer(fastConfig(), tr, &routes, probe.StaticResolver{}, nil,
		mqwire.Observability{Registerer: reg, Name: name})
}

// sendsBy sums mqfault_sends_total by the producer label, and counts the
// mqfault_isolated_brokers gauges by it.
func sendsBy(t *testing.T, reg *prometheus.Registry) (sends map[string]float64, gauges map[string]int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	sends, gauges = map[string]float64{}, map[string]int{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var name string
			for _, l := range m.GetLabel() {
				if l.GetName() == mqwire.ProducerLabel {
					name = l.GetValue()
				}
			}
			switch mf.GetName() {
			case "mqfault_sends_total":
				sends[name] += m.GetCounter().GetValue()
			case "mqfault_isolated_brokers":
				gauges[name]++
			}
		}
	}
	return sends, gauges
}

// TestTwoProducersOneRegistry shows two producers exporting to one
// registry, told apart by Observability.Name (the producer label), and what
// happens without names: a clear error that says what to do.
func TestTwoProducersOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	orders, cleanOrders, err := answering(t, reg, "orders")
	if err != nil {
		t.Fatalf("NewObservedProducer(orders) error = %v", err)
	}
	audit, cleanAudit, err := answering(t, reg, "audit")
	if err != nil {
		t.Fatalf("NewObservedProducer(audit) on the registry orders uses: error = %v", err)
	}
	for p, n := range map[*producer.Producer]int{orders: 3, audit: 1} {
		for range n {
			if _, err := p.SendSync(context.Background(), &producer.Message{Topic: "T"}); err != nil {
				t.Fatalf("SendSync() error = %v", err)
			}
		}
	}
	sends, gauges := sendsBy(t, reg)
	if sends["orders"] != 3 || sends["audit"] != 1 || len(sends) != 2 {
		t.Errorf("mqfault_sends_total by producer = %v, want orders 3, audit 1", sends)
	}
	if gauges["orders"] != 1 || gauges["audit"] != 1 || len(gauges) != 2 {
		t.Errorf("mqfault_isolated_brokers series by producer = %v, want one each for orders and audit", gauges)
	}

	// The same name again collides, and says so.
	_, _, err = answering(t, reg, "orders")
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) || !strings.Contains(err.Error(), `producer "orders"`) || !strings.Contains(err.Error(), "Observability.Name") {
		t.Errorf("a second producer named orders: error = %v, want AlreadyRegisteredError naming it and Observability.Name", err)
	}
	cleanOrders()
	cleanAudit()
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("registry after both cleanups has %d families, want 0", len(mfs))
	}
	goleak.VerifyNone(t)
}

// TestTwoUnnamedProducers shows the error a second unnamed producer gets.
func TestTwoUnnamedProducers(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, cleanup, err := answering(t, reg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	_, _, err = answering(t, reg, "")
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) || !strings.Contains(err.Error(), "Observability.Name") || !strings.Contains(err.Error(), "give each producer sharing it its own name") {
		t.Errorf("a second unnamed producer on one registry: error = %v, want AlreadyRegisteredError saying to name them", err)
	}
}
