package observe

import (
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// JoinLatency returns an observer that tells each of obs, in order, of every
// event. Nil observers are skipped; with none left it returns nil (the
// strategy then builds no events), with one it returns that one. The result is
// as safe for concurrent use as the observers it joins.
func JoinLatency(obs ...latency.Observer) latency.Observer {
	list := latencyList(nonNil(obs))
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type latencyList []latency.Observer

func (l latencyList) OnIsolate(ev latency.IsolationEvent) {
	for _, o := range l {
		o.OnIsolate(ev)
	}
}

func (l latencyList) OnRecover(ev latency.RecoveryEvent) {
	for _, o := range l {
		o.OnRecover(ev)
	}
}

func (l latencyList) OnProbe(ev latency.ProbeEvent) {
	for _, o := range l {
		o.OnProbe(ev)
	}
}

// JoinProducer returns an observer that tells each of obs, in order, of every
// attempt and send. Nil observers are skipped; with none left it returns nil
// (the producer then builds no events), with one it returns that one.
func JoinProducer(obs ...producer.Observer) producer.Observer {
	list := producerList(nonNil(obs))
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type producerList []producer.Observer

func (l producerList) OnAttempt(ev producer.AttemptEvent) {
	for _, o := range l {
		o.OnAttempt(ev)
	}
}

func (l producerList) OnSend(ev producer.SendEvent) {
	for _, o := range l {
		o.OnSend(ev)
	}
}

// nonNil returns the observers of obs that are not nil, in order.
func nonNil[T any](obs []T) []T {
	var out []T
	for _, o := range obs {
		if any(o) != nil {
			out = append(out, o)
		}
	}
	return out
}
