// Package prom exports an mqfault producer's events as Prometheus metrics
// (github.com/prometheus/client_golang). It is a package of its own so that
// only programs that import it depend on client_golang; the core packages
// (route, latency, producer) never do.
//
// Metrics (namespace "mqfault" unless WithNamespace says otherwise):
//
//	mqfault_isolated_brokers                     gauge    brokers isolated now (read from the fault table at scrape time)
//	mqfault_unreachable_brokers                  gauge    brokers marked unreachable now
//	mqfault_isolations_total{broker,reason}      counter  isolations begun: the broker went from available to isolated (reason: latency, failure, explicit)
//	mqfault_isolation_extensions_total{broker,reason} counter  running isolations made longer (a failure or slow answer while isolated)
//	mqfault_isolations_ended_total{broker}       counter  isolations whose time ran out (the broker is picked again; not proof that it works)
//	mqfault_probes_total{result}                 counter  detector probes (result: reachable, unreachable, inconclusive)
//	mqfault_picks_total{stage}                   counter  picks by the cascade stage that answered (from the strategy's StageCounter)
//	mqfault_attempts_total{broker,outcome}       counter  send attempts (outcome: answered, client, transport, broker, cancelled, busy)
//	mqfault_sends_total{kind,result}             counter  sends ended (kind: sync, async, oneway; result: the Stop, e.g. answered, failed)
//	mqfault_send_duration_seconds{kind}          histogram how long sends took, retries included
//
// Start with New, register the *Metrics with a prometheus.Registerer, give it
// to the strategy (latency.WithObserver) and the producer
// (producer.WithObserver), and call Watch with the strategy for the gauges
// and the pick counts.
package prom

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// Metrics turns the strategy's and the producer's events into Prometheus
// metrics. It implements latency.Observer, producer.Observer and
// prometheus.Collector. All methods are safe for concurrent use and never
// block: an event costs a few atomic adds (and, for a broker's first event, one
// allocation of its series).
//
// One Metrics serves one strategy (Watch): to export several producers to
// one registry, give each its own Metrics, registered through
// prometheus.WrapRegistererWith with a constant label that tells them apart
// (package wire does that with Observability.Name: producer="NAME"). A
// constant label rather than a producer label on every vector: a Metrics
// never sees another producer's events, and the gauges and pick counts read
// one strategy; wrapping labels all of them, those from Collect included.
type Metrics struct {
	isolations *prometheus.CounterVec
	extensions *prometheus.CounterVec
	ended      *prometheus.CounterVec
	probes     [3]prometheus.Counter // reachable, unreachable, inconclusive
	probeVec   *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	sends      *prometheus.CounterVec
	sendsBy    [][]prometheus.Counter // by kind, then stop
	duration   *prometheus.HistogramVec
	durationBy []prometheus.Observer // by kind
	refused    prometheus.Counter    // sends whose retry the retry budget refused

	isolatedDesc    *prometheus.Desc
	unreachableDesc *prometheus.Desc
	picksDesc       *prometheus.Desc

	strategy atomic.Pointer[latency.Strategy]
	brokers  sync.Map // broker name -> *brokerSeries
}

var (
	_ latency.Observer     = (*Metrics)(nil)
	_ producer.Observer    = (*Metrics)(nil)
	_ prometheus.Collector = (*Metrics)(nil)
)

// How many kinds, outcome classes and stops the producer has: series are
// resolved for each in advance, indexed by their numeric values. They come
// from the producer's own lists, so a class or stop added there gets its
// series here.
var (
	numKinds   = len(producer.Kinds())
	numClasses = len(producer.Classes())
	numStops   = len(producer.Stops())
)

var reasons = [...]latency.Reason{latency.ReasonLatency, latency.ReasonFailure, latency.ReasonExplicit}

// brokerSeries are one broker's series, resolved once so an event is an
// atomic add.
type brokerSeries struct {
	attempts   []prometheus.Counter // by class
	isolations [len(reasons)]prometheus.Counter
	extensions [len(reasons)]prometheus.Counter
	ended      prometheus.Counter
}

// Option configures Metrics.
type Option func(*options)

type options struct {
	namespace string
	buckets   []float64
}

// WithNamespace sets the metrics' namespace (default "mqfault").
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithBuckets sets the send-duration histogram's buckets, in seconds (default
// 1 ms to 10 s, roughly doubling).
func WithBuckets(b []float64) Option {
	return func(o *options) { o.buckets = append([]float64(nil), b...) }
}

// DefaultBuckets are the send-duration histogram's default buckets, in
// seconds: they resolve the reference's duration-table thresholds (50 ms,
// 100 ms, 550 ms, 1.8 s, 3 s, 5 s).
func DefaultBuckets() []float64 {
	return []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .55, 1, 1.8, 3, 5, 10}
}

// New returns unregistered metrics. It returns an error only for an invalid
// namespace or buckets.
func New(opts ...Option) (*Metrics, error) {
	o := options{namespace: "mqfault", buckets: DefaultBuckets()}
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkName(o.namespace); err != nil {
		return nil, err
	}
	for i := 1; i < len(o.buckets); i++ {
		if o.buckets[i] <= o.buckets[i-1] {
			return nil, errors.New("prom: histogram buckets must be strictly ascending")
		}
	}
	name := func(s string) string { return prometheus.BuildFQName(o.namespace, "", s) }
	m := &Metrics{
		isolations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("isolations_total"),
			Help: "Broker isolations begun (the broker went from available to isolated), by broker and reason."}, []string{"broker", "reason"}),
		extensions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("isolation_extensions_total"),
			Help: "Running broker isolations made longer, by broker and reason."}, []string{"broker", "reason"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("isolations_ended_total"),
			Help: "Broker isolations whose time ran out (the broker is picked again, which does not mean it works), by broker."}, []string{"broker"}),
		probeVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("probes_total"),
			Help: "Detector probes, by result."}, []string{"result"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("attempts_total"),
			Help: "Send attempts, by broker and outcome."}, []string{"broker", "outcome"}),
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("sends_total"),
			Help: "Sends ended, by kind and result."}, []string{"kind", "result"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: name("retries_refused_total"),
			Help: "Sends whose retry the producer's retry budget refused (the send ended with its last error)."}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name("send_duration_seconds"),
			Help: "How long sends took, retries included, by kind.", Buckets: o.buckets}, []string{"kind"}),
		isolatedDesc: prometheus.NewDesc(name("isolated_brokers"),
			"Brokers isolated now.", nil, nil),
		unreachableDesc: prometheus.NewDesc(name("unreachable_brokers"),
			"Brokers marked unreachable now.", nil, nil),
		picksDesc: prometheus.NewDesc(name("picks_total"),
			"Picks by the cascade stage that answered them.", []string{"stage"}, nil),
	}
	for i, r := range []string{"reachable", "unreachable", "inconclusive"} {
		m.probes[i] = m.probeVec.WithLabelValues(r)
	}
	m.sendsBy = make([][]prometheus.Counter, numKinds)
	m.durationBy = make([]prometheus.Observer, numKinds)
	for k := range numKinds {
		kind := kindLabel(producer.Kind(k))
		m.durationBy[k] = m.duration.WithLabelValues(kind)
		m.sendsBy[k] = make([]prometheus.Counter, numStops)
		for s := range numStops {
			m.sendsBy[k][s] = m.sends.WithLabelValues(kind, producer.Stop(s).String())
		}
	}
	return m, nil
}

func checkName(ns string) error {
	for i, r := range ns {
		ok := r == '_' || r == ':' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return errors.New("prom: invalid namespace " + ns)
		}
	}
	return nil
}

func kindLabel(k producer.Kind) string { return strings.ToLower(k.String()) }

// Watch makes the gauges and the pick counts read s: its fault table (at
// scrape time) and its latency.StageCounter, if it has one. Until Watch is
// called they are not exported. Safe to call at any time; the last call wins.
func (m *Metrics) Watch(s *latency.Strategy) { m.strategy.Store(s) }

func (m *Metrics) broker(name string) *brokerSeries {
	if b, ok := m.brokers.Load(name); ok {
		return b.(*brokerSeries)
	}
	b := &brokerSeries{ended: m.ended.WithLabelValues(name), attempts: make([]prometheus.Counter, numClasses)}
	for c := range numClasses {
		b.attempts[c] = m.attempts.WithLabelValues(name, producer.Class(c).String())
	}
	for i, r := range reasons {
		b.isolations[i] = m.isolations.WithLabelValues(name, string(r))
		b.extensions[i] = m.extensions.WithLabelValues(name, string(r))
	}
	actual, _ := m.brokers.LoadOrStore(name, b)
	return actual.(*brokerSeries)
}

// OnIsolate counts an isolation begun, or one extended, by broker and
// reason.
func (m *Metrics) OnIsolate(ev latency.IsolationEvent) {
	for i, r := range reasons {
		if r == ev.Reason {
			b := m.broker(ev.Broker)
			if ev.Extended {
				b.extensions[i].Inc()
			} else {
				b.isolations[i].Inc()
			}
			return
		}
	}
	vec := m.isolations
	if ev.Extended {
		vec = m.extensions
	}
	vec.WithLabelValues(ev.Broker, string(ev.Reason)).Inc()
}

// OnRecover counts an isolation that ended, by broker.
func (m *Metrics) OnRecover(ev latency.RecoveryEvent) { m.broker(ev.Broker).ended.Inc() }

// OnProbe counts a probe by result.
func (m *Metrics) OnProbe(ev latency.ProbeEvent) {
	switch {
	case ev.Err == nil:
		m.probes[0].Inc()
	case errors.Is(ev.Err, latency.ErrProbeInconclusive):
		m.probes[2].Inc()
	default:
		m.probes[1].Inc()
	}
}

// OnAttempt counts an attempt by broker and outcome.
func (m *Metrics) OnAttempt(ev producer.AttemptEvent) {
	if c := int(ev.Outcome.Class); c < numClasses {
		m.broker(ev.Queue.BrokerName).attempts[c].Inc()
	}
}

// OnSend counts a send by kind and result, and observes its duration.
func (m *Metrics) OnSend(ev producer.SendEvent) {
	k, s := int(ev.Kind), int(ev.Stop)
	if k >= numKinds || s >= numStops {
		return
	}
	m.sendsBy[k][s].Inc()
	m.durationBy[k].Observe(ev.Elapsed.Seconds())
	if ev.RetryRefused {
		m.refused.Inc()
	}
}

// vecs are the metric vectors Metrics collects as they are.
func (m *Metrics) vecs() []prometheus.Collector {
	return []prometheus.Collector{m.isolations, m.extensions, m.ended, m.probeVec, m.attempts, m.sends, m.duration, m.refused}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range m.vecs() {
		v.Describe(ch)
	}
	ch <- m.isolatedDesc
	ch <- m.unreachableDesc
	ch <- m.picksDesc
}

// Collect implements prometheus.Collector. It reads the watched strategy's
// fault table (a snapshot) and stage counter; it never touches the pick path.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, v := range m.vecs() {
		v.Collect(ch)
	}
	s := m.strategy.Load()
	if s == nil {
		return
	}
	var isolated, unreachable int
	for _, it := range s.FaultTolerance().Items() {
		if !it.Available {
			isolated++
		}
		if !it.Reachable {
			unreachable++
		}
	}
	ch <- prometheus.MustNewConstMetric(m.isolatedDesc, prometheus.GaugeValue, float64(isolated))
	ch <- prometheus.MustNewConstMetric(m.unreachableDesc, prometheus.GaugeValue, float64(unreachable))
	if c := s.StageCounter(); c != nil {
		for _, st := range latency.Stages() {
			ch <- prometheus.MustNewConstMetric(m.picksDesc, prometheus.CounterValue, float64(c.Count(st)), st.String())
		}
	}
}
