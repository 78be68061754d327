package sim

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// queueBroker is a broker serving capacity sends a second with a send queue
// of queueWait, answering after a constant 2 ms once served.
func queueBroker(capacity float64, queueWait time.Duration, events ...Event) *brokerSim {
	for i := range events {
		events[i].Broker = "a"
	}
	return newBrokerSim(Broker{Name: "a", Queues: 1, Latency: Latency{Median: 2 * time.Millisecond, P99: 2 * time.Millisecond},
		Capacity: capacity, QueueWait: queueWait}, 0, events)
}

// TestQueueFIFO sends a burst of ten at once to a broker serving 100 a
// second: they are served in arrival order, 10 ms apart, each waiting
// for the ones ahead of it, and the latency of each is its wait plus the
// broker's 2 ms.
func TestQueueFIFO(t *testing.T) {
	b := queueBroker(100, time.Second)
	for i := range 10 {
		o, _, _ := b.attempt(0, 3*time.Second, draws{})
		if o.Class != latency.ClassAnswered {
			t.Fatalf("attempt %d = %+v, want an answer", i, o)
		}
		if want := time.Duration(i)*10*time.Millisecond + 2*time.Millisecond; o.Elapsed != want {
			t.Errorf("attempt %d took %s, want %s (its place in the queue x 10ms + 2ms)", i, o.Elapsed, want)
		}
	}
	// One arriving after the queue drained waits for nothing.
	if o, _, _ := b.attempt(sec, 3*time.Second, draws{}); o.Elapsed != 2*time.Millisecond {
		t.Errorf("an attempt to an idle broker took %s, want 2ms", o.Elapsed)
	}
}

// TestQueueWaitGrowsWithLoad offers a broker serving 1000 a second 500,
// 900, 1000 and 1100 a second, evenly, for 2 s: below capacity no send
// waits; at capacity the waits stay bounded; above it each send waits
// longer than the one before, the waits growing by (1100/1000-1) x the gap
// per send.
func TestQueueWaitGrowsWithLoad(t *testing.T) {
	meanWait := func(rate float64) (mean, last time.Duration) {
		b := queueBroker(1000, time.Hour)
		gap := 1e9 / rate
		var sum time.Duration
		n := 0
		for at := 0.0; at < float64(2*sec); at += gap {
			o, _, _ := b.attempt(int64(at), 2*time.Hour, draws{})
			last = o.Elapsed - 2*time.Millisecond
			sum += last
			n++
		}
		return sum / time.Duration(n), last
	}
	prev := time.Duration(-1)
	for _, rate := range []float64{500, 900, 1000, 1100, 1500} {
		mean, last := meanWait(rate)
		t.Logf("%v/s: mean wait %s, last %s", rate, mean, last)
		if mean < prev {
			t.Errorf("at %v/s the mean wait %s is below the one at a lower rate (%s)", rate, mean, prev)
		}
		prev = mean
		switch {
		case rate < 1000 && last != 0:
			t.Errorf("at %v/s (below capacity) a send waited %s, want 0", rate, last)
		case rate == 1000 && last > time.Millisecond:
			t.Errorf("at capacity a send waited %s, want at most one service time (1ms)", last)
		case rate > 1000:
			// 2 s of arrivals at rate, served at 1000/s: the last waits for the excess.
			want := time.Duration((2*rate - 2000) / 1000 * float64(time.Second))
			if d := last - want; d < -2*time.Millisecond || d > 2*time.Millisecond {
				t.Errorf("at %v/s the last send waited %s, want about %s", rate, last, want)
			}
		}
	}
}

// TestQueueTimeoutClean fills the queue of a broker serving 100 a second
// with a 200 ms send queue: the 21st of a burst would wait 200 ms and is
// served; the 22nd would wait 210 ms and is answered SYSTEM_BUSY with
// RocketMQ's [TIMEOUT_CLEAN_QUEUE] remark after exactly 200 ms, taking no
// service, so the next arrival that fits is served in its place.
func TestQueueTimeoutClean(t *testing.T) {
	b := queueBroker(100, 200*time.Millisecond)
	for i := range 21 {
		if o, _, _ := b.attempt(0, 3*time.Second, draws{}); o.Class != latency.ClassAnswered {
			t.Fatalf("attempt %d = %+v, want an answer (it waits %dms)", i, o, 10*i)
		}
	}
	for i := range 3 {
		o, _, _ := b.attempt(0, 3*time.Second, draws{})
		if o.Class != latency.ClassBusy || o.Code != SystemBusy || o.Elapsed != 200*time.Millisecond {
			t.Fatalf("rejected attempt %d = %+v, want SYSTEM_BUSY after exactly 200ms", i, o)
		}
		var be *producer.BrokerError
		if !errors.As(o.Err, &be) {
			t.Fatalf("error %v is not a *producer.BrokerError", o.Err)
		}
		// 21 sends ahead of it when it arrived (210 ms of service).
		want := "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, size of queue: 21"
		if be.Remark != want {
			t.Errorf("remark = %q, want %q", be.Remark, want)
		}
		if got := producer.Classify(producer.Result{}, o.Err); got.Code != SystemBusy || got.Class != latency.ClassBusy || got.Remark != want {
			t.Errorf("Classify(error) = %+v, want class busy, code %d and the remark", got, SystemBusy)
		}
		// What reaches the strategy through Pick.Done.
		if r := o.Report(latency.PathSend); r.Class != latency.ClassBusy || r.Code != SystemBusy || r.Remark != want || r.Latency != 200*time.Millisecond {
			t.Errorf("Report() = %+v, want class busy, code 2, the remark, latency 200ms", r)
		}
	}
	// The rejected sends took no service: one arriving 10 ms later waits 200 ms.
	if o, _, _ := b.attempt(10*int64(time.Millisecond), 3*time.Second, draws{}); o.Class != latency.ClassAnswered || o.Elapsed != 202*time.Millisecond {
		t.Errorf("attempt after the rejections = %+v, want an answer after 200ms + 2ms", o)
	}
	// The queue it found is counted: 0.5 ms after a burst of 41 at 1000/s
	// with a 40 ms queue, one send is in service and 40 wait; the new one
	// would wait 40.5 ms.
	b = queueBroker(1000, 40*time.Millisecond)
	for range 41 {
		b.attempt(0, 3*time.Second, draws{})
	}
	o, _, _ := b.attempt(int64(time.Millisecond)/2, 3*time.Second, draws{})
	var be *producer.BrokerError
	if !errors.As(o.Err, &be) || !strings.HasSuffix(be.Remark, "period in queue: 40ms, size of queue: 41") {
		t.Errorf("remark = %v, want period 40ms and the 41 sends queued ahead when it arrived", o.Err)
	}
}

// TestQueueAttemptTimeout: a send whose wait plus latency exceeds its
// attempt's timeout is a timeout at the client; it still took its place in
// the queue (the broker serves a request whose client gave up).
func TestQueueAttemptTimeout(t *testing.T) {
	b := queueBroker(10, time.Second) // 100 ms a send
	b.attempt(0, time.Second, draws{})
	o, _, _ := b.attempt(0, 50*time.Millisecond, draws{}) // would wait 100 ms
	if o.Class != latency.ClassTransportTimeout || o.Elapsed != 50*time.Millisecond+timeoutLag {
		t.Errorf("attempt = %+v, want a timeout at 50ms+lag", o)
	}
	if o, _, _ := b.attempt(0, time.Second, draws{}); o.Elapsed != 202*time.Millisecond {
		t.Errorf("the third send took %s, want 202ms: the timed-out one kept its place", o.Elapsed)
	}
	// A rejection later than the attempt's timeout is never seen: a timeout.
	b = queueBroker(10, 300*time.Millisecond)
	for range 4 {
		b.attempt(0, time.Second, draws{})
	}
	if o, _, _ := b.attempt(0, 250*time.Millisecond, draws{}); o.Class != latency.ClassTransportTimeout {
		t.Errorf("attempt = %+v, want a timeout: the broker answers busy only after 300ms", o)
	}
}

// TestQueueCapacity offers a broker serving 200 a second with a 200 ms
// queue a Poisson-ish 1000 a second (seeded) for 10 s: in every window of
// 1 s the services started are at most 200 x 1 s + 1, over the run about
// 200 a second, and every other send answered busy.
func TestQueueCapacity(t *testing.T) {
	b := queueBroker(200, 200*time.Millisecond)
	dice := newAttemptRand()
	var starts []int64 // service start of every answered send
	busy, n := 0, 0
	at := 0.0
	for i := 0; at < float64(10*sec); i++ {
		u := dice.draws(1, uint64(i+1), 0)
		at += -1e6 * math.Log(1-u.busy) // exponential gaps, mean 1 ms
		o, _, _ := b.attempt(int64(at), 3*time.Second, draws{})
		n++
		switch {
		case o.Class == latency.ClassAnswered:
			starts = append(starts, int64(at)+int64(o.Elapsed-2*time.Millisecond))
		case o.Code == SystemBusy:
			busy++
		default:
			t.Fatalf("attempt = %+v, want an answer or SYSTEM_BUSY", o)
		}
	}
	for i, s := range starts {
		j := i
		for j < len(starts) && starts[j] < s+sec {
			j++
		}
		if j-i > 201 {
			t.Fatalf("%d services started in the second from %s, want at most 201", j-i, time.Duration(s))
		}
		if i > 0 && s < starts[i-1] {
			t.Fatalf("service %d started at %s, before the one ahead of it (%s)", i, time.Duration(s), time.Duration(starts[i-1]))
		}
	}
	if got := len(starts); got < 1990 || got > 2041 {
		t.Errorf("served %d of %d sends in 10 s, want about 2000 (200/s, plus at most the 200 ms queue)", got, n)
	}
	if busy != n-len(starts) {
		t.Errorf("%d busy answers, want %d", busy, n-len(starts))
	}
}

// TestRejectRequestRemark: a broker over its capacity without a send queue
// refuses at once with RocketMQ's [OVERLOAD] remark (a full send pool).
func TestRejectRequestRemark(t *testing.T) {
	b := testBroker(20) // a burst of minBurst
	for range minBurst {
		if o, _, _ := b.attempt(0, time.Second, draws{}); o.Class != latency.ClassAnswered {
			t.Fatalf("an attempt within the burst = %+v, want an answer", o)
		}
	}
	o, _, _ := b.attempt(0, time.Second, draws{})
	var be *producer.BrokerError
	if !errors.As(o.Err, &be) || be.Code != SystemBusy || be.Remark != "[OVERLOAD]system busy, start flow control for a while" {
		t.Errorf("attempt() error = %#v, want SYSTEM_BUSY with the [OVERLOAD] remark", o.Err)
	}
	if o.Elapsed != 2*time.Millisecond {
		t.Errorf("refusal took %s, want the broker's latency (2ms): no queue", o.Elapsed)
	}
	if r := o.Report(latency.PathSend); r.Class != latency.ClassBusy || r.Code != SystemBusy || r.Remark != be.Remark {
		t.Errorf("Report() = %+v, want class busy, code 2 and the [OVERLOAD] remark", r)
	}
}

func TestRemarkQueueTimeout(t *testing.T) {
	got := remarkQueueTimeout(20*time.Millisecond, 15)
	// As a real 4.9.8 broker words it (/work/shared/REAL-BROKER.md).
	want := "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 20ms, size of queue: 15"
	if got != want {
		t.Errorf("remarkQueueTimeout() = %q, want %q", got, want)
	}
}
