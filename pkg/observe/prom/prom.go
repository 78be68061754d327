// Package prom exports an mqfault producer's events as Prometheus metrics
// (github.com/prometheus/client_golang). It is a package of its own so that
// only programs that import it depend on client_golang; the core packages
// (route, latency, producer) never do.
//
// Metrics (namespace "mqfault" unless WithNamespace says otherwise):
//
//	mqfault_isolated_brokers                     gauge    brokers isolated now (read from the fault table at scrape time)
//	mqfault_unreachable_brokers                  gauge    brokers marked unreachable now
//	mqfault_broker_isolated{broker}              gauge    1 while the broker is isolated, else 0 (a series per broker in the fault table)
//	mqfault_broker_unreachable{broker}           gauge    1 while the detector holds the broker unreachable, else 0
//	mqfault_isolations_total{broker,reason}      counter  isolations begun: the broker went from available to isolated
//	mqfault_isolation_extensions_total{broker,reason} counter  running isolations made longer (a failure or slow answer while isolated)
//	mqfault_isolations_ended_total{broker}       counter  isolations whose time ran out (the broker is picked again; not proof that it works)
//	mqfault_probes_total{result}                 counter  detector probes
//	mqfault_picks_total{stage}                   counter  picks by the cascade stage that answered (from the strategy's StageCounter)
//	mqfault_attempts_total{broker,outcome}       counter  send attempts, by what they met
//	mqfault_attempt_duration_seconds{broker}     histogram how long attempts took, by broker (the latency the fault table is told)
//	mqfault_sends_total{kind,result}             counter  sends ended
//	mqfault_send_duration_seconds{kind}          histogram how long sends took, retries included
//	mqfault_retries_refused_total                counter  sends whose retry the retry budget refused
//	mqfault_sends_waited_total                   counter  sync sends that waited for room before their last attempt (producer.Config.RoomWait)
//
// Label values:
//
//	broker   a broker name of the routes; the per-broker series of a broker
//	         go at a scrape when the strategy has no fault item for it (no
//	         route names it any more) and no event named it since the last
//	         scrape, so they stay bounded by the routes' brokers
//	reason   latency (a slow answer, per the duration table), failure (a
//	         failed attempt or a failed probe), explicit (an isolation set by
//	         the program through the fault table, not by an attempt)
//	result   (probes) reachable, unreachable, inconclusive (the probe could
//	         not tell: no address, no answer within its time)
//	stage    the cascade's stages (latency.Stages: available, reachable, any,
//	         least_bad, ...)
//	outcome  latency's classes (latency.Classes): answered, busy, broker,
//	         transport_failed, transport_timeout, transport_not_sent,
//	         throttled, client, cancelled
//	kind     sync, async, oneway
//	result   (sends) how the send ended (producer.Stops, "none" excluded:
//	         a send still going has no result): answered, failed,
//	         call_timeout, broker_error, cancelled, aborted, no_room (a
//	         full broker's busy answer not retried: no broker had room)
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
	"github.com/mqfault/mqfault/pkg/probe"
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
	attemptDur *prometheus.HistogramVec
	sends      *prometheus.CounterVec
	sendsBy    [][]prometheus.Counter // by kind, then stop
	duration   *prometheus.HistogramVec
	durationBy []prometheus.Observer // by kind
	refused    prometheus.Counter    // sends whose retry the retry budget refused
	waited     prometheus.Counter    // sends that waited for room

	isolatedDesc          *prometheus.Desc
	unreachableDesc       *prometheus.Desc
	brokerIsolatedDesc    *prometheus.Desc
	brokerUnreachableDesc *prometheus.Desc
	picksDesc             *prometheus.Desc

	strategy atomic.Pointer[latency.Strategy]
	brokers  sync.Map // broker name -> *brokerSeries
}

var (
	_ latency.Observer     = (*Metrics)(nil)
	_ producer.Observer    = (*Metrics)(nil)
	_ prometheus.Collector = (*Metrics)(nil)
)

// How many kinds, outcome classes and stops there are: series are resolved
// for each in advance, indexed by their numeric values. They come from the
// producer's and latency's own lists, so a class or stop added there gets
// its series here.
var (
	numKinds   = len(producer.Kinds())
	numClasses = len(latency.Classes())
	numStops   = len(producer.Stops())
)

var reasons = [...]latency.Reason{latency.ReasonLatency, latency.ReasonFailure, latency.ReasonExplicit, latency.ReasonStall}

// brokerSeries are one broker's series, resolved once so an event is an
// atomic add.
type brokerSeries struct {
	// touched is set by every event naming the broker and cleared by each
	// scrape (prune).
	touched    atomic.Bool
	attempts   []prometheus.Counter // by latency class
	duration   prometheus.Observer
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

// WithBuckets sets the send- and attempt-duration histograms' buckets, in
// seconds (default 1 ms to 10 s, roughly doubling).
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
		attemptDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name("attempt_duration_seconds"),
			Help: "How long send attempts took, by broker.", Buckets: o.buckets}, []string{"broker"}),
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("sends_total"),
			Help: "Sends ended, by kind and result."}, []string{"kind", "result"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: name("retries_refused_total"),
			Help: "Sends whose retry the producer's retry budget refused (the send ended with its last error)."}),
		waited: prometheus.NewCounter(prometheus.CounterOpts{Name: name("sends_waited_total"),
			Help: "Sync sends that waited for room before their last attempt (the producer's RoomWait)."}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name("send_duration_seconds"),
			Help: "How long sends took, retries included, by kind.", Buckets: o.buckets}, []string{"kind"}),
		isolatedDesc: prometheus.NewDesc(name("isolated_brokers"),
			"Brokers isolated now.", nil, nil),
		unreachableDesc: prometheus.NewDesc(name("unreachable_brokers"),
			"Brokers marked unreachable now.", nil, nil),
		brokerIsolatedDesc: prometheus.NewDesc(name("broker_isolated"),
			"1 while the broker is isolated, else 0.", []string{"broker"}, nil),
		brokerUnreachableDesc: prometheus.NewDesc(name("broker_unreachable"),
			"1 while the broker is marked unreachable, else 0.", []string{"broker"}, nil),
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
			if producer.Stop(s) == producer.StopNone {
				continue // a send still going has no result
			}
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
		bs := b.(*brokerSeries)
		bs.touched.Store(true)
		return bs
	}
	b := &brokerSeries{ended: m.ended.WithLabelValues(name), attempts: make([]prometheus.Counter, numClasses),
		duration: m.attemptDur.WithLabelValues(name)}
	for c := range numClasses {
		b.attempts[c] = m.attempts.WithLabelValues(name, latency.Class(c).String())
	}
	for i, r := range reasons {
		b.isolations[i] = m.isolations.WithLabelValues(name, string(r))
		b.extensions[i] = m.extensions.WithLabelValues(name, string(r))
	}
	actual, _ := m.brokers.LoadOrStore(name, b)
	bs := actual.(*brokerSeries)
	bs.touched.Store(true)
	return bs
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
	case errors.Is(ev.Err, probe.ErrInconclusive):
		m.probes[2].Inc()
	default:
		m.probes[1].Inc()
	}
}

// OnAttempt counts an attempt by broker and outcome (latency's class), and
// observes its duration.
func (m *Metrics) OnAttempt(ev producer.AttemptEvent) {
	if c := int(ev.Outcome.Class); c < numClasses {
		b := m.broker(ev.Queue.BrokerName)
		b.attempts[c].Inc()
		b.duration.Observe(ev.Outcome.Elapsed.Seconds())
	}
}

// OnSend counts a send by kind and result, and observes its duration.
func (m *Metrics) OnSend(ev producer.SendEvent) {
	k, s := int(ev.Kind), int(ev.Stop)
	if k >= numKinds || s >= numStops {
		return
	}
	if m.sendsBy[k][s] == nil {
		return // StopNone: not an ended send
	}
	m.sendsBy[k][s].Inc()
	m.durationBy[k].Observe(ev.Elapsed.Seconds())
	if ev.RetryRefused {
		m.refused.Inc()
	}
	if ev.Waited {
		m.waited.Inc()
	}
}

// vecs are the metric vectors Metrics collects as they are.
func (m *Metrics) vecs() []prometheus.Collector {
	return []prometheus.Collector{m.isolations, m.extensions, m.ended, m.probeVec, m.attempts, m.attemptDur, m.sends, m.duration, m.refused, m.waited}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range m.vecs() {
		v.Describe(ch)
	}
	ch <- m.isolatedDesc
	ch <- m.unreachableDesc
	ch <- m.brokerIsolatedDesc
	ch <- m.brokerUnreachableDesc
	ch <- m.picksDesc
}

// Collect implements prometheus.Collector. It reads the watched strategy's
// fault table (a snapshot) and stage counter; it never touches the pick path.
// A broker the table has no item for and no event has named since the last
// scrape (no route names it, or it has gone quiet) loses its per-broker
// series first, so they stay bounded by the routes' brokers; an event for it
// later brings them back, from zero. A broker with no item that events keep
// naming (one that only pushes back, which the preset counts as load, not
// failure) keeps its series.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	s := m.strategy.Load()
	var items []latency.FaultItem
	if s != nil {
		items = s.Table().Items()
		m.prune(items)
	}
	for _, v := range m.vecs() {
		v.Collect(ch)
	}
	if s == nil {
		return
	}
	var isolated, unreachable int
	for _, it := range items {
		iso, unr := 0.0, 0.0
		if !it.Available {
			isolated++
			iso = 1
		}
		if !it.Reachable {
			unreachable++
			unr = 1
		}
		ch <- prometheus.MustNewConstMetric(m.brokerIsolatedDesc, prometheus.GaugeValue, iso, it.Broker)
		ch <- prometheus.MustNewConstMetric(m.brokerUnreachableDesc, prometheus.GaugeValue, unr, it.Broker)
	}
	ch <- prometheus.MustNewConstMetric(m.isolatedDesc, prometheus.GaugeValue, float64(isolated))
	ch <- prometheus.MustNewConstMetric(m.unreachableDesc, prometheus.GaugeValue, float64(unreachable))
	if c := s.StageCounter(); c != nil {
		for _, st := range latency.Stages() {
			ch <- prometheus.MustNewConstMetric(m.picksDesc, prometheus.CounterValue, float64(c.Count(st)), st.String())
		}
	}
}

// prune deletes the per-broker series of every broker that items (the fault
// table's) does not have and that no event named since the last prune.
func (m *Metrics) prune(items []latency.FaultItem) {
	have := make(map[string]bool, len(items))
	for _, it := range items {
		have[it.Broker] = true
	}
	m.brokers.Range(func(k, v any) bool {
		name := k.(string)
		if touched := v.(*brokerSeries).touched.Swap(false); have[name] || touched {
			return true
		}
		m.brokers.Delete(name)
		filter := prometheus.Labels{"broker": name}
		for _, v := range []interface {
			DeletePartialMatch(prometheus.Labels) int
		}{m.isolations, m.extensions, m.ended, m.attempts, m.attemptDur} {
			v.DeletePartialMatch(filter)
		}
		return true
	})
}
