package trace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// outcome is one OUTCOME word of a send: what one attempt meets.
type outcome struct {
	word string        // as written, for the attempt line
	kind string        // ok, notok, client, remoting, broker, interrupted
	lat  time.Duration // LAT
	code int           // broker's CODE
}

func parseOutcome(w string) (outcome, error) {
	f := strings.Split(w, ":")
	o := outcome{word: w, kind: f[0]}
	want := 2
	switch o.kind {
	case "ok", "notok", "client", "remoting", "interrupted":
	case "broker":
		want = 3
	default:
		return o, fmt.Errorf("outcome %q: want ok, notok, client, remoting, broker or interrupted", w)
	}
	if len(f) != want {
		if want == 3 {
			return o, fmt.Errorf("outcome %q: want broker:LAT:CODE", w)
		}
		return o, fmt.Errorf("outcome %q: want %s:LAT", w, o.kind)
	}
	lat, err := parseMillis(f[1])
	if err != nil {
		return o, fmt.Errorf("outcome %q: %w", w, err)
	}
	o.lat = lat
	if want == 3 {
		c, err := parseInt32(f[2])
		if err != nil {
			return o, fmt.Errorf("outcome %q: %w", w, err)
		}
		o.code = int(c)
	}
	return o, nil
}

// answer is what the Transport would have returned for the outcome.
func (o outcome) answer(broker string) (producer.Result, error) {
	switch o.kind {
	case "notok":
		return producer.Result{Status: producer.FlushDiskTimeout}, nil
	case "client":
		return producer.Result{}, &producer.ClientError{Broker: broker, Err: errors.New("client error")}
	case "remoting":
		return producer.Result{}, &producer.TransportError{Broker: broker, Class: latency.ClassTransportTimeout, Err: errors.New("remoting error")}
	case "broker":
		return producer.Result{}, &producer.BrokerError{Broker: broker, Code: o.code}
	case "interrupted":
		return producer.Result{}, producer.ErrInterrupted
	}
	return producer.Result{Status: producer.SendOK}, nil
}

var sendKinds = map[string]producer.Kind{"SYNC": producer.KindSync, "ASYNC": producer.KindAsync, "ONEWAY": producer.KindOneway}

// opSend runs one send through the producer's shared drive (producer.Drive:
// the step function joined to the strategy's picks) with the trace's strategy
// and clock: every attempt meets the next outcome, takes LAT on the clock,
// and is reported through its pick, which makes the fault update the
// strategy's rules call for. The
// trace language models sendDefaultImpl only: an ASYNC send's attempt that
// meets ok or notok is the dispatch (the loop's own update, then the result
// OK(ASYNC)); its answer and the async retries are not modelled.
func (m *machine) opSend(a []string) error {
	kind, ok := sendKinds[a[0]]
	if !ok {
		return fmt.Errorf("mode %q: want SYNC, ASYNC or ONEWAY", a[0])
	}
	outcomes := make([]outcome, 0, len(a)-1)
	for _, w := range a[1:] {
		o, err := parseOutcome(w)
		if err != nil {
			return err
		}
		outcomes = append(outcomes, o)
	}
	if err := m.needRoute(); err != nil {
		return err
	}
	policy, err := producer.NewPolicy(producer.Config{
		RetryTimes:                       m.send.retryTimes,
		Timeout:                          max(m.send.timeout, 1), // a policy needs a positive budget; 0 ms behaves alike
		RetryAnotherBrokerWhenNotStoreOK: m.send.retryAnotherBroker,
		RetryCodes:                       m.retryCodes(),
		RouteRefreshInterval:             time.Hour,
	}, m.mode)
	if err != nil {
		return err
	}
	d := producer.NewDrive(m.strat, m.info, policy, kind, m.clock.Now())
	result := ""
	for next := 0; d.Next(m.clock.Now()); next++ {
		plan, ok := d.Start(m.clock.Now())
		if !ok {
			break
		}
		o := outcome{word: "ok:1", kind: "ok", lat: time.Millisecond}
		if next < len(outcomes) {
			o = outcomes[next]
		}
		if err := m.advance(o.lat); err != nil {
			return err
		}
		if err := m.consultTable(); err != nil {
			return err
		}
		var u producer.FaultUpdate
		if kind == producer.KindAsync && (o.kind == "ok" || o.kind == "notok") {
			u, _ = d.Dispatched(o.lat)
			result = "OK(ASYNC)"
		} else {
			out := producer.Classify(o.answer(plan.Queue.BrokerName))
			out.Elapsed = o.lat
			u = d.Finish(out).Update
		}
		m.printf("  attempt %d -> %s %s %s", plan.Attempt, plan.Queue.String(), o.word, m.formatUpdate(u))
		if result != "" {
			break
		}
	}
	l := d.Loop()
	if result == "" {
		result = sendResult(l)
	}
	m.printf("send %s -> %s brokersSent=[%s]", a[0], result, strings.Join(l.BrokersSent(), ", "))
	return nil
}

func (m *machine) retryCodes() []int {
	codes := make([]int, 0, len(m.send.retryCodes))
	for c := range m.send.retryCodes {
		codes = append(codes, c)
	}
	return codes
}

func (m *machine) formatUpdate(u producer.FaultUpdate) string {
	s := "update(" + u.Broker + "," + strconv.FormatInt(u.Latency.Milliseconds(), 10) + "," + strconv.FormatBool(u.Isolation)
	if m.spec.Reachability {
		s += "," + strconv.FormatBool(u.Reachable)
	}
	return s + ")"
}

// sendResult prints how the loop ended, in the reference's words.
func sendResult(l *producer.Loop) string {
	res, err := l.Result()
	switch l.Stop() {
	case producer.StopAnswered:
		switch {
		case l.Kind() != producer.KindSync:
			return "OK(" + l.Kind().String() + ")"
		case res.Status == producer.SendOK:
			return "SEND_OK"
		}
		return "NOT_SEND_OK_RETURNED"
	case producer.StopCallTimeout:
		return "CALL_TIMEOUT"
	case producer.StopBrokerError:
		return "THROW " + exceptionName(err)
	case producer.StopCancelled:
		return "THROW InterruptedException"
	case producer.StopFailed:
		return "FAILED after " + strconv.Itoa(l.Attempts()) + " (last=" + exceptionName(err) + ")"
	case producer.StopNoRoom:
		// Not the reference's: only a strategy with a capacity model ends
		// a send so, and traces run the reference's modes.
		return "NO_ROOM after " + strconv.Itoa(l.Attempts()) + " (last=" + exceptionName(err) + ")"
	}
	return "NO_QUEUE"
}

// exceptionName names the reference's exception for the error behind err.
func exceptionName(err error) string {
	var be *producer.BrokerError
	var ce *producer.ClientError
	switch {
	case errors.As(err, &be):
		return "MQBrokerException(" + strconv.Itoa(be.Code) + ")"
	case errors.As(err, &ce):
		return "MQClientException"
	case errors.Is(err, producer.ErrInterrupted):
		return "InterruptedException"
	}
	return "RemotingException"
}
