package observe

import (
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

type countingLatency struct {
	latency.NopObserver
	name string
	log  *[]string
}

func (c countingLatency) OnIsolate(latency.IsolationEvent) {
	*c.log = append(*c.log, c.name+".isolate")
}
func (c countingLatency) OnRecover(latency.RecoveryEvent) { *c.log = append(*c.log, c.name+".recover") }
func (c countingLatency) OnProbe(latency.ProbeEvent)      { *c.log = append(*c.log, c.name+".probe") }

type countingProducer struct {
	name string
	log  *[]string
}

func (c countingProducer) OnAttempt(producer.AttemptEvent) {
	*c.log = append(*c.log, c.name+".attempt")
}
func (c countingProducer) OnSend(producer.SendEvent) { *c.log = append(*c.log, c.name+".send") }

func TestJoinLatency(t *testing.T) {
	if got := JoinLatency(); got != nil {
		t.Errorf("JoinLatency() = %v, want nil", got)
	}
	if got := JoinLatency(nil, nil); got != nil {
		t.Errorf("JoinLatency(nil, nil) = %v, want nil", got)
	}
	var log []string
	a := countingLatency{name: "a", log: &log}
	if got := JoinLatency(nil, a); got != latency.Observer(a) {
		t.Errorf("JoinLatency(nil, a) = %v, want a itself", got)
	}
	j := JoinLatency(a, nil, countingLatency{name: "b", log: &log})
	j.OnIsolate(latency.IsolationEvent{})
	j.OnRecover(latency.RecoveryEvent{})
	j.OnProbe(latency.ProbeEvent{})
	want := []string{"a.isolate", "b.isolate", "a.recover", "b.recover", "a.probe", "b.probe"}
	if len(log) != len(want) {
		t.Fatalf("calls = %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("calls = %v, want %v", log, want)
		}
	}
}

func TestJoinProducer(t *testing.T) {
	if got := JoinProducer(nil); got != nil {
		t.Errorf("JoinProducer(nil) = %v, want nil", got)
	}
	var log []string
	a := countingProducer{name: "a", log: &log}
	if got := JoinProducer(a); got != producer.Observer(a) {
		t.Errorf("JoinProducer(a) = %v, want a itself", got)
	}
	j := JoinProducer(a, countingProducer{name: "b", log: &log})
	j.OnAttempt(producer.AttemptEvent{})
	j.OnSend(producer.SendEvent{})
	want := []string{"a.attempt", "b.attempt", "a.send", "b.send"}
	if len(log) != len(want) {
		t.Fatalf("calls = %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("calls = %v, want %v", log, want)
		}
	}
}
