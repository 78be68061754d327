package sim

import (
	"errors"
	"math"
	"slices"
	"time"
)

// metrics collects what one run measures. It belongs to the run's goroutine.
type metrics struct {
	sends, succeeded, failed       int64
	attempts, firstFailures        int64
	unhealthy                      int64
	brokerAttempts, brokerFailed   []int64
	retries, refused, waited, busy int64
	shed, inFlightAtEnd            int64

	lat    []int64 // every send's whole latency, ns
	latSec []int32 // the second each send started in

	seconds  int
	brokers  int
	perSec   []int32 // attempts per second and broker: perSec[sec*brokers+b]
	started  []int64 // sends started per second
	failures []int64 // sends failed per second (by start)
	retrySec []int64 // retries started per second
	busySec  []int64 // attempts started per second that were answered busy
}

// init sizes m for a run of sc over brokers brokers whose series hold
// seconds points.
func (m *metrics) init(sc *Scenario, brokers, seconds int) {
	m.brokers = brokers
	m.brokerAttempts = make([]int64, brokers)
	m.brokerFailed = make([]int64, brokers)
	m.seconds = seconds
	m.perSec = make([]int32, m.seconds*brokers)
	m.started = make([]int64, m.seconds)
	m.failures = make([]int64, m.seconds)
	m.retrySec = make([]int64, m.seconds)
	m.busySec = make([]int64, m.seconds)
	// An open load's count is a Poisson draw: room for four deviations more.
	expected := int(sc.Rate * sc.Duration.Seconds())
	expected += sc.Senders + 4*int(math.Sqrt(float64(expected))) + 16
	m.lat = make([]int64, 0, expected)
	m.latSec = make([]int32, 0, expected)
}

func (m *metrics) second(at int64) int {
	return min(int(at/int64(time.Second)), m.seconds-1)
}

// attempt records an attempt started at at on broker b; number counts the
// send's attempts from 0 (so number > 0 is a retry), busy says the broker
// answered it with flow control.
func (m *metrics) attempt(at int64, b, number int, failed, busy, unhealthy bool) {
	m.attempts++
	sec := m.second(at)
	if number > 0 {
		m.retries++
		m.retrySec[sec]++
	}
	if busy {
		m.busy++
		m.busySec[sec]++
	}
	m.brokerAttempts[b]++
	if failed {
		m.brokerFailed[b]++
		if number == 0 {
			m.firstFailures++
		}
	}
	if unhealthy {
		m.unhealthy++
	}
	m.perSec[sec*m.brokers+b]++
}

// shedSend records a send that arrived at at while MaxInFlight sends were
// in flight: it failed at once, no attempt made. It is a send and a failed
// send, not a latency: nothing was tried.
func (m *metrics) shedSend(at int64) {
	m.sends++
	m.failed++
	m.shed++
	sec := m.second(at)
	m.started[sec]++
	m.failures[sec]++
}

// retryRefusal is what the error of a send whose retry a retry budget
// refused says: an error in its chain (errors.As) with RetryRefused
// returning true. The send ended with its last attempt's error.
type retryRefusal interface{ RetryRefused() bool }

// sendEnded records what the loop said of a send that ended (after send):
// whether a retry budget refused its retry.
func (m *metrics) sendEnded(err error) {
	if err != nil && retryRefused(err) {
		m.refused++
	}
}

// retryRefused reports whether err says a retry budget refused the send's
// retry. Its own function: the target errors.As takes escapes, and a
// successful send must not pay for that allocation.
func retryRefused(err error) bool {
	var r retryRefusal
	return errors.As(err, &r) && r.RetryRefused()
}

// send records a send started at start that took elapsed.
func (m *metrics) send(start, elapsed int64, ok bool) {
	m.sends++
	sec := m.second(start)
	m.started[sec]++
	if ok {
		m.succeeded++
	} else {
		m.failed++
		m.failures[sec]++
	}
	m.lat = append(m.lat, elapsed)
	m.latSec = append(m.latSec, int32(sec))
}

// percentile returns the nearest-rank quantile of sorted values at permille
// per thousand (500 is the median, 1000 the maximum), or 0 when there are
// none. Integer arithmetic keeps it exact.
func percentile(sorted []int64, permille int) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (permille*n + 999) / 1000 // ceil(permille/1000 * n)
	return sorted[min(max(rank, 1), n)-1]
}

// result turns the measurements into a Result.
func (m *metrics) result(spec Strategy, sc *Scenario) Result {
	r := Result{
		Name:                 spec.Name,
		Summary:              spec.Summary,
		Ablated:              spec.Ablated,
		Sends:                m.sends,
		Succeeded:            m.succeeded,
		Failed:               m.failed,
		Attempts:             m.attempts,
		FirstAttemptFailures: m.firstFailures,
		UnhealthyAttempts:    m.unhealthy,
		Retries:              m.retries,
		RetriesRefused:       m.refused,
		Waited:               m.waited,
		BusyAnswers:          m.busy,
		Shed:                 m.shed,
		InFlightAtEnd:        m.inFlightAtEnd,
	}
	for i, b := range sc.Brokers {
		r.Brokers = append(r.Brokers, BrokerResult{Name: b.Name, Attempts: m.brokerAttempts[i], Failures: m.brokerFailed[i]})
	}
	// Per-second p99 first: it needs the sends grouped by second.
	series := Series{Seconds: m.seconds, P99: make([]time.Duration, m.seconds), Sends: m.started, Failed: m.failures,
		Retries: m.retrySec, Busy: m.busySec}
	bySec := make([][]int64, m.seconds)
	for i, l := range m.lat {
		s := m.latSec[i]
		bySec[s] = append(bySec[s], l)
	}
	for s, ls := range bySec {
		slices.Sort(ls)
		series.P99[s] = time.Duration(percentile(ls, 990))
	}
	series.Attempts = make([][]int32, m.brokers)
	for b := range m.brokers {
		series.Attempts[b] = make([]int32, m.seconds)
		for s := range m.seconds {
			series.Attempts[b][s] = m.perSec[s*m.brokers+b]
		}
	}
	r.Series = series
	all := m.lat
	slices.Sort(all)
	r.Latency = Percentiles{
		P50:  time.Duration(percentile(all, 500)),
		P99:  time.Duration(percentile(all, 990)),
		P999: time.Duration(percentile(all, 999)),
		Max:  time.Duration(percentile(all, 1000)),
	}
	return r
}
