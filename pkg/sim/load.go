package sim

import (
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/mqfault/mqfault/internal/input/yamldoc"
)

// MaxScenarioBytes bounds the size of a scenario file.
const MaxScenarioBytes = 1 << 20

// LoadFile reads and validates the YAML scenario in the file at path. Errors
// reading the file are returned as they are (an *fs.PathError); errors in the
// scenario match ErrInvalidScenario and name the field and line.
func LoadFile(path string) (*Scenario, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// readFile reads the file at path, at most one byte past MaxScenarioBytes
// (so that Parse and ParseFamily can say it is too large).
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxScenarioBytes+1))
}

// Parse reads a scenario from YAML and validates it. The YAML has this shape
// (see the package documentation for every field):
//
//	name: example
//	duration: 90s          # virtual time
//	seed: 1
//	load: closed           # or open: Poisson arrivals at rate, no senders
//	senders: 8             # concurrent senders (closed load only)
//	rate: 2000             # sends per second, all senders together
//	send_timeout: 3s
//	producers: 1           # a fleet: independent producers sharing the brokers
//	route_poll: 30s        # how often each producer polls the route
//	brokers:
//	  - {name: broker-a, queues: 4, latency: {median: 3ms, p99: 20ms}, capacity: 1500, queue_wait: 200ms}
//	events:
//	  - {broker: broker-a, at: 10s, for: 30s, state: down}
//
// Decoding is strict: an unknown or repeated field, a value of the wrong
// type, a duration that is not a Go duration string ("250ms", "1m30s") and a
// value out of range are all errors, reported together: a value of the
// wrong type does not hide the range errors of other fields (and is not
// reported again as out of range). The error joins one *FieldError per
// problem, unknown fields first and then in the order of the lines (at most 20, then one saying how many
// more), each naming the field's path and line, and matches
// ErrInvalidScenario. Parse never panics.
func Parse(data []byte) (*Scenario, error) {
	if len(data) > MaxScenarioBytes {
		return nil, &FieldError{Msg: fmt.Sprintf("the scenario is larger than %d bytes", MaxScenarioBytes)}
	}
	root, prob := yamldoc.Parse(data)
	if prob != nil {
		if yamldoc.IsEmpty(prob) {
			return nil, &FieldError{Msg: "the scenario is empty"}
		}
		return nil, fieldError(*prob)
	}
	d := &decoder{Decoder: yamldoc.Decoder{RootName: "(scenario)", Max: maxErrors}}
	s := &Scenario{}
	d.scenario(root, s)
	// Check the values too, leaving out what the decoder already refused: a
	// field that did not decode holds its zero value, which a range check
	// would only report again in other words.
	p := problems{pos: d.Position, skip: d.Failed, brokersUnknown: d.Failed("brokers[0].name")}
	for i := range s.Brokers {
		p.brokersUnknown = p.brokersUnknown || d.Failed(fmt.Sprintf("brokers[%d].name", i))
	}
	for _, dp := range d.Problems() {
		p.errs = append(p.errs, fieldError(dp))
	}
	p.dropped = d.Dropped()
	s.validate(&p)
	if s.open() && d.senders && s.Senders == 0 {
		// Validate sees an absent field as 0: an explicit 0 is still a
		// senders field an open load must not have.
		p.add("senders", "an open load has no senders (sends start at rate whatever earlier sends did): leave the field out")
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return s, nil
}

func fieldError(p yamldoc.Problem) *FieldError {
	return &FieldError{Path: p.Path, Line: p.Line, Column: p.Column, Msg: p.Msg}
}

// decoder turns YAML nodes into a Scenario.
type decoder struct {
	yamldoc.Decoder
	senders bool // the scenario has a senders field
}

var (
	scenarioFields = []string{"name", "duration", "seed", "load", "senders", "rate", "send_timeout", "producers", "route_poll", "brokers", "events"}
	brokerFields   = []string{"name", "queues", "latency", "capacity", "queue_wait", "joins"}
	latencyFields  = []string{"median", "p99"}
	eventFields    = []string{"broker", "at", "for", "state", "latency", "rate", "code", "period", "length", "probe"}
)

func (d *decoder) scenario(n *yaml.Node, s *Scenario) {
	d.Fields(n, "", scenarioFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			s.Name = d.String(v, path)
		case "duration":
			s.Duration = d.Duration(v, path)
		case "seed":
			s.Seed = d.Uint(v, path)
		case "load":
			s.Load = Load(d.String(v, path))
		case "senders":
			s.Senders = d.Int(v, path)
			d.senders = true
		case "rate":
			s.Rate = d.Float(v, path)
		case "send_timeout":
			s.SendTimeout = d.Duration(v, path)
			if s.SendTimeout == 0 && !d.Failed(path) {
				d.Fail(v, path, "0s must be positive (leave the field out for the reference's 3s)")
			}
		case "producers":
			s.Producers = d.Int(v, path)
			if s.Producers == 0 && !d.Failed(path) {
				d.Fail(v, path, "0 must be at least 1 (leave the field out for one producer)")
			}
		case "route_poll":
			s.RoutePoll = d.Duration(v, path)
			if s.RoutePoll == 0 && !d.Failed(path) {
				d.Fail(v, path, "0s must be positive (leave the field out for the client's 30s)")
			}
		case "brokers":
			d.List(v, path, MaxBrokers, func(v *yaml.Node, path string) { s.Brokers = append(s.Brokers, d.broker(v, path)) })
		case "events":
			d.List(v, path, MaxEvents, func(v *yaml.Node, path string) { s.Events = append(s.Events, d.event(v, path)) })
		}
	})
}

func (d *decoder) broker(n *yaml.Node, path string) Broker {
	var b Broker
	d.Fields(n, path, brokerFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			b.Name = d.String(v, path)
		case "queues":
			b.Queues = d.Int(v, path)
		case "latency":
			b.Latency = d.latency(v, path)
		case "capacity":
			b.Capacity = d.Float(v, path)
		case "queue_wait":
			b.QueueWait = d.Duration(v, path)
		case "joins":
			b.Joins = d.Duration(v, path)
		}
	})
	return b
}

func (d *decoder) latency(n *yaml.Node, path string) Latency {
	var l Latency
	d.Fields(n, path, latencyFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "median":
			l.Median = d.Duration(v, path)
		case "p99":
			l.P99 = d.Duration(v, path)
		}
	})
	return l
}

func (d *decoder) event(n *yaml.Node, path string) Event {
	var e Event
	d.Fields(n, path, eventFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "broker":
			e.Broker = d.String(v, path)
		case "at":
			e.At = d.Duration(v, path)
		case "for":
			e.For = d.Duration(v, path)
		case "state":
			e.State = State(d.String(v, path))
		case "latency":
			e.Latency = d.latency(v, path)
		case "rate":
			e.Rate = d.Float(v, path)
		case "code":
			e.Code = d.Int(v, path)
			if e.Code == 0 && !d.Failed(path) {
				d.Fail(v, path, "0 is SUCCESS, not an error code: want a positive response code (leave it out for SYSTEM_BUSY, 2)")
			}
		case "period":
			e.Period = d.Duration(v, path)
		case "length":
			e.Length = d.Duration(v, path)
		case "probe":
			e.Probe = Probe(d.String(v, path))
		}
	})
	return e
}
