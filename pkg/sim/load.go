package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxScenarioBytes bounds the size of a scenario file.
const MaxScenarioBytes = 1 << 20

// LoadFile reads and validates the YAML scenario in the file at path. Errors
// reading the file are returned as they are (an *fs.PathError); errors in the
// scenario match ErrInvalidScenario and name the field and line.
func LoadFile(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScenarioBytes+1))
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse reads a scenario from YAML and validates it. The YAML has this shape
// (see the package documentation for every field):
//
//	name: example
//	duration: 90s          # virtual time
//	seed: 1
//	senders: 8             # concurrent senders
//	rate: 2000             # sends per second, all senders together
//	send_timeout: 3s
//	brokers:
//	  - {name: broker-a, queues: 4, latency: {median: 3ms, p99: 20ms}, capacity: 1500}
//	events:
//	  - {broker: broker-a, at: 10s, for: 30s, state: down}
//
// Decoding is strict: an unknown or repeated field, a value of the wrong
// type, a duration that is not a Go duration string ("250ms", "1m30s") and a
// value out of range are all errors. The error joins one *FieldError per
// problem (at most 20), each naming the field's path and line, and matches
// ErrInvalidScenario. Parse never panics.
func Parse(data []byte) (*Scenario, error) {
	if len(data) > MaxScenarioBytes {
		return nil, &FieldError{Msg: fmt.Sprintf("the scenario is larger than %d bytes", MaxScenarioBytes)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Msg: "the scenario is empty"}
		}
		return nil, &FieldError{Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &FieldError{Line: extra.Line, Path: "(document)", Msg: "a scenario file holds one YAML document"}
	}
	d := &decoder{pos: map[string][2]int{}}
	s := &Scenario{}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, &FieldError{Msg: "the scenario is empty"}
		}
		root = resolve(root.Content[0])
	}
	d.scenario(root, s)
	if len(d.p.errs) > 0 {
		return nil, d.p.err()
	}
	p := problems{pos: d.position}
	s.validate(&p)
	if err := p.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// decoder turns YAML nodes into a Scenario, recording where each field is.
type decoder struct {
	p   problems
	pos map[string][2]int // path -> line, column
}

// position finds the line of path, or of its closest enclosing field.
func (d *decoder) position(path string) (int, int) {
	for {
		if lc, ok := d.pos[path]; ok {
			return lc[0], lc[1]
		}
		i := strings.LastIndexAny(path, ".[")
		if i <= 0 {
			return 0, 0
		}
		path = path[:i]
	}
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	if len(d.p.errs) >= maxErrors {
		return
	}
	d.p.errs = append(d.p.errs, &FieldError{Path: path, Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)})
}

// resolve follows aliases (at most a few levels; yaml refuses cycles).
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}

// fields walks mapping n, calling set for each known key; unknown and
// repeated keys are errors.
func (d *decoder) fields(n *yaml.Node, path string, known []string, set func(key string, v *yaml.Node, path string)) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, orRoot(path), "is %s, want a mapping with the fields %s", kindName(n), strings.Join(known, ", "))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		key := k.Value
		fp := key
		if path != "" {
			fp = path + "." + key
		}
		switch {
		case k.Kind != yaml.ScalarNode:
			d.fail(k, orRoot(path), "a key is %s, want a field name", kindName(k))
		case !slices.Contains(known, key):
			d.fail(k, fp, "unknown field (want one of %s)", strings.Join(known, ", "))
		case seen[key]:
			d.fail(k, fp, "repeated field")
		default:
			seen[key] = true
			d.pos[fp] = [2]int{v.Line, v.Column}
			set(key, v, fp)
		}
	}
}

func orRoot(path string) string {
	if path == "" {
		return "(scenario)"
	}
	return path
}

func (d *decoder) scalar(n *yaml.Node, path, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.fail(n, path, "is %s, want %s", kindName(n), want)
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(n *yaml.Node, path string) string {
	v, _ := d.scalar(n, path, "a string")
	return v
}

func (d *decoder) duration(n *yaml.Node, path string) time.Duration {
	v, ok := d.scalar(n, path, "a duration such as 250ms, 30s or 1m30s")
	if !ok {
		return 0
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		d.fail(n, path, "%q is not a duration (write it as 250ms, 30s or 1m30s)", v)
		return 0
	}
	return dur
}

func (d *decoder) integer(n *yaml.Node, path string) int {
	v, ok := d.scalar(n, path, "an integer")
	if !ok {
		return 0
	}
	var i int64
	if n.ShortTag() != "!!int" || n.Decode(&i) != nil || i < math.MinInt32 || i > math.MaxInt32 {
		d.fail(n, path, "%q is not an integer", v)
		return 0
	}
	return int(i)
}

func (d *decoder) seed(n *yaml.Node, path string) uint64 {
	v, ok := d.scalar(n, path, "a non-negative integer")
	if !ok {
		return 0
	}
	var u uint64
	if n.ShortTag() != "!!int" || n.Decode(&u) != nil {
		d.fail(n, path, "%q is not a non-negative integer", v)
		return 0
	}
	return u
}

func (d *decoder) number(n *yaml.Node, path string) float64 {
	v, ok := d.scalar(n, path, "a number")
	if !ok {
		return 0
	}
	var f float64
	tag := n.ShortTag()
	if (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.fail(n, path, "%q is not a number", v)
		return 0
	}
	return f
}

// list walks sequence n, calling each for its items; more than most items
// is an error.
func (d *decoder) list(n *yaml.Node, path string, most int, each func(v *yaml.Node, path string)) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // an empty list
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "is %s, want a list", kindName(n))
		return
	}
	if len(n.Content) > most {
		d.fail(n, path, "%d items, more than %d", len(n.Content), most)
		return
	}
	for i, v := range n.Content {
		fp := fmt.Sprintf("%s[%d]", path, i)
		v = resolve(v)
		d.pos[fp] = [2]int{v.Line, v.Column}
		each(v, fp)
	}
}

var (
	scenarioFields = []string{"name", "duration", "seed", "senders", "rate", "send_timeout", "brokers", "events"}
	brokerFields   = []string{"name", "queues", "latency", "capacity"}
	latencyFields  = []string{"median", "p99"}
	eventFields    = []string{"broker", "at", "for", "state", "latency", "rate", "code", "period", "probe"}
)

func (d *decoder) scenario(n *yaml.Node, s *Scenario) {
	d.fields(n, "", scenarioFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			s.Name = d.str(v, path)
		case "duration":
			s.Duration = d.duration(v, path)
		case "seed":
			s.Seed = d.seed(v, path)
		case "senders":
			s.Senders = d.integer(v, path)
		case "rate":
			s.Rate = d.number(v, path)
		case "send_timeout":
			before := len(d.p.errs)
			s.SendTimeout = d.duration(v, path)
			if s.SendTimeout == 0 && len(d.p.errs) == before {
				d.fail(v, path, "0s must be positive (leave the field out for the reference's 3s)")
			}
		case "brokers":
			d.list(v, path, MaxBrokers, func(v *yaml.Node, path string) { s.Brokers = append(s.Brokers, d.broker(v, path)) })
		case "events":
			d.list(v, path, MaxEvents, func(v *yaml.Node, path string) { s.Events = append(s.Events, d.event(v, path)) })
		}
	})
}

func (d *decoder) broker(n *yaml.Node, path string) Broker {
	var b Broker
	d.fields(n, path, brokerFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			b.Name = d.str(v, path)
		case "queues":
			b.Queues = d.integer(v, path)
		case "latency":
			b.Latency = d.latency(v, path)
		case "capacity":
			b.Capacity = d.number(v, path)
		}
	})
	return b
}

func (d *decoder) latency(n *yaml.Node, path string) Latency {
	var l Latency
	d.fields(n, path, latencyFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "median":
			l.Median = d.duration(v, path)
		case "p99":
			l.P99 = d.duration(v, path)
		}
	})
	return l
}

func (d *decoder) event(n *yaml.Node, path string) Event {
	var e Event
	d.fields(n, path, eventFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "broker":
			e.Broker = d.str(v, path)
		case "at":
			e.At = d.duration(v, path)
		case "for":
			e.For = d.duration(v, path)
		case "state":
			e.State = State(d.str(v, path))
		case "latency":
			e.Latency = d.latency(v, path)
		case "rate":
			e.Rate = d.number(v, path)
		case "code":
			before := len(d.p.errs)
			e.Code = d.integer(v, path)
			if e.Code == 0 && len(d.p.errs) == before {
				d.fail(v, path, "0 is SUCCESS, not an error code: want a positive response code (leave it out for SYSTEM_BUSY, 2)")
			}
		case "period":
			e.Period = d.duration(v, path)
		case "probe":
			e.Probe = Probe(d.str(v, path))
		}
	})
	return e
}
