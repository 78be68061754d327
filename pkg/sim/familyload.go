package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mqfault/mqfault/internal/input/yamldoc"
)

// FamilyError holds every problem of a family, one *FieldError per line
// of its message. It matches ErrInvalidFamily.
type FamilyError struct {
	// Err joins the field errors, in the order of the lines.
	Err error
}

func (e *FamilyError) Error() string { return e.Err.Error() }

// Is makes errors.Is(err, ErrInvalidFamily) true.
func (e *FamilyError) Is(target error) bool { return target == ErrInvalidFamily }

// LoadFamily reads and validates the YAML family in the file at path.
// Errors reading the file are returned as they are; errors in the family
// are a *FamilyError naming the field and line of every problem.
func LoadFamily(path string) (*Family, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseFamily(data)
}

// ParseFamily reads a family from YAML and validates it (pkg/sim's README
// documents the format). Decoding is strict, as Parse's: an unknown or
// repeated field, a value of the wrong type and a value out of range are
// errors, all reported at once in a *FamilyError. ParseFamily never panics.
func ParseFamily(data []byte) (*Family, error) {
	if len(data) > MaxScenarioBytes {
		return nil, &FamilyError{Err: &FieldError{Msg: fmt.Sprintf("the family is larger than %d bytes", MaxScenarioBytes)}}
	}
	root, prob := yamldoc.Parse(data)
	if prob != nil {
		if yamldoc.IsEmpty(prob) {
			return nil, &FamilyError{Err: &FieldError{Msg: "the family is empty"}}
		}
		return nil, &FamilyError{Err: fieldError(*prob)}
	}
	d := &familyDecoder{Decoder: yamldoc.Decoder{RootName: "(family)", Max: maxErrors}}
	f := &Family{}
	d.family(root, f)
	p := problems{pos: d.Position, skip: d.Failed}
	for _, dp := range d.Problems() {
		p.errs = append(p.errs, fieldError(dp))
	}
	p.dropped = d.Dropped()
	f.validate(&p)
	if err := p.err(); err != nil {
		return nil, &FamilyError{Err: err}
	}
	return f, nil
}

type familyDecoder struct {
	yamldoc.Decoder
}

var (
	familyFields   = []string{"name", "duration", "send_timeout", "brokers", "queues", "latency", "capacity", "flow_control", "queue_wait", "load", "faults"}
	famLatFields   = []string{"median", "tail"}
	famCapFields   = []string{"per_broker", "uneven", "spread"}
	famLoadFields  = []string{"model", "senders", "utilization", "max_rate"}
	famFaultFields = []string{"count", "at", "for", "probe", "states"}
	distFields     = []string{"min", "max", "log"}
)

func (d *familyDecoder) family(n *yaml.Node, f *Family) {
	f.FlowControl = Weights{{Name: FlowNone, Weight: 1}}
	f.QueueWait = Fixed(float64(defaultQueueWait))
	f.Load.Model = Weights{{Name: string(LoadClosed), Weight: 1}}
	d.Fields(n, "", familyFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "name":
			f.Name = d.String(v, path)
		case "duration":
			f.Duration = d.dist(v, path, kindDuration)
		case "send_timeout":
			f.SendTimeout = d.dist(v, path, kindDuration)
		case "brokers":
			f.Brokers = d.dist(v, path, kindCount)
		case "queues":
			f.Queues = d.dist(v, path, kindCount)
		case "latency":
			d.Fields(v, path, famLatFields, func(key string, v *yaml.Node, path string) {
				switch key {
				case "median":
					f.Latency.Median = d.dist(v, path, kindDuration)
				case "tail":
					f.Latency.Tail = d.dist(v, path, kindNumber)
				}
			})
		case "capacity":
			d.Fields(v, path, famCapFields, func(key string, v *yaml.Node, path string) {
				switch key {
				case "per_broker":
					f.Capacity.PerBroker = d.dist(v, path, kindNumber)
				case "uneven":
					f.Capacity.Uneven = d.Float(v, path)
				case "spread":
					f.Capacity.Spread = d.dist(v, path, kindNumber)
				}
			})
		case "flow_control":
			f.FlowControl = d.weights(v, path)
		case "queue_wait":
			f.QueueWait = d.dist(v, path, kindDuration)
		case "load":
			d.Fields(v, path, famLoadFields, func(key string, v *yaml.Node, path string) {
				switch key {
				case "model":
					f.Load.Model = d.weights(v, path)
				case "senders":
					f.Load.Senders = d.dist(v, path, kindCount)
				case "utilization":
					f.Load.Utilization = d.dist(v, path, kindNumber)
				case "max_rate":
					f.Load.MaxRate = d.Float(v, path)
				}
			})
		case "faults":
			d.faults(v, path, &f.Faults)
		}
	})
}

func (d *familyDecoder) faults(n *yaml.Node, path string, ff *FamilyFaults) {
	d.Fields(n, path, famFaultFields, func(key string, v *yaml.Node, path string) {
		switch key {
		case "count":
			ff.Count = d.dist(v, path, kindCount)
		case "at":
			ff.At = d.dist(v, path, kindNumber)
		case "for":
			ff.For = d.dist(v, path, kindDuration)
		case "probe":
			ff.Probe = d.weights(v, path)
		case "states":
			d.Mapping(v, path, "a mapping of states ("+stateList()+") to their weights and parameters",
				func(key string, k, v *yaml.Node, path string) {
					kind, ok := faultKinds[State(key)]
					if !ok {
						d.Fail(k, path, "%q is not one of %s", key, stateList())
						return
					}
					st := FamilyState{State: State(key), Weight: 1}
					fields := []string{"weight", "probe"}
					for _, p := range kind.params {
						fields = append(fields, p.name)
					}
					if yamldoc.IsNull(yamldoc.Resolve(v)) {
						ff.States = append(ff.States, st)
						return
					}
					d.Fields(v, path, fields, func(key string, v *yaml.Node, path string) {
						switch key {
						case "weight":
							st.Weight = d.Float(v, path)
						case "probe":
							st.Probe = d.weights(v, path)
						default:
							i := slices.IndexFunc(kind.params, func(p faultParam) bool { return p.name == key })
							if st.Params == nil {
								st.Params = map[string]Dist{}
							}
							st.Params[key] = d.dist(v, path, kind.params[i].kind)
						}
					})
					ff.States = append(ff.States, st)
				})
		}
	})
}

// dist decodes a Dist: a value, a list of values, or {min, max, log}.
func (d *familyDecoder) dist(n *yaml.Node, path string, kind valueKind) Dist {
	n = yamldoc.Resolve(n)
	switch n.Kind {
	case yaml.SequenceNode:
		var out Dist
		d.List(n, path, 1000, func(v *yaml.Node, path string) { out.Values = append(out.Values, d.value(v, path, kind)) })
		if len(out.Values) == 0 && !d.Failed(path) {
			d.Fail(n, path, "an empty list: want at least one value")
		}
		return out
	case yaml.MappingNode:
		var out Dist
		d.Fields(n, path, distFields, func(key string, v *yaml.Node, path string) {
			switch key {
			case "min":
				out.Min = d.value(v, path, kind)
			case "max":
				out.Max = d.value(v, path, kind)
			case "log":
				out.Log = d.bool(v, path)
			}
		})
		return out
	}
	return Fixed(d.value(n, path, kind))
}

func (d *familyDecoder) value(n *yaml.Node, path string, kind valueKind) float64 {
	switch kind {
	case kindCount:
		return float64(d.Int(n, path))
	case kindDuration:
		return float64(d.Duration(n, path))
	}
	return d.Float(n, path)
}

func (d *familyDecoder) bool(n *yaml.Node, path string) bool {
	v, ok := d.Scalar(n, path, "true or false")
	if !ok {
		return false
	}
	var b bool
	if n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		d.Fail(n, path, "%q is not true or false", v)
	}
	return b
}

// weights decodes weights: a mapping of names to weights, in order, or one
// name (weight 1).
func (d *familyDecoder) weights(n *yaml.Node, path string) Weights {
	n = yamldoc.Resolve(n)
	if n.Kind == yaml.ScalarNode && !yamldoc.IsNull(n) {
		return Weights{{Name: n.Value, Weight: 1}}
	}
	var w Weights
	d.Mapping(n, path, "a name, or a mapping of names to weights", func(key string, _, v *yaml.Node, path string) {
		w = append(w, Weighted{Name: key, Weight: d.Float(v, path)})
	})
	return w
}

// Validate checks every field of f and returns nil or a *FamilyError
// (errors.Is(err, ErrInvalidFamily)) naming every problem.
func (f *Family) Validate() error {
	var p problems
	f.validate(&p)
	if err := p.err(); err != nil {
		return &FamilyError{Err: err}
	}
	return nil
}

// Checks of one value a Dist may draw; each returns "" or what is wrong.
func durationCheck(lo, hi time.Duration) func(float64) string {
	return func(v float64) string {
		switch {
		case v < float64(lo):
			return fmt.Sprintf("%s is shorter than %s", time.Duration(v), lo)
		case v > float64(hi):
			return fmt.Sprintf("%s is longer than %s", time.Duration(v), hi)
		}
		return ""
	}
}

var latencyCheck = durationCheck(time.Microsecond, MaxLatency)

func atLeast(lo float64, what string) func(float64) string {
	return func(v float64) string {
		if v < lo {
			return fmt.Sprintf("%v is below %v (%s)", v, lo, what)
		}
		return ""
	}
}

func between(lo, hi float64, what string) func(float64) string {
	return func(v float64) string {
		if v < lo || v > hi {
			return fmt.Sprintf("%v is not in [%v, %v] (%s)", v, lo, hi, what)
		}
		return ""
	}
}

func share(v float64) string {
	if v <= 0 || v > 1 {
		return fmt.Sprintf("%v must be in (0, 1]: the share of attempts answered with the code", v)
	}
	return ""
}

// checkDist reports d's problems at path: missing when required and
// zero, a range the wrong way round, log-uniform from zero, and every value
// it could draw that check refuses.
func checkDist(p *problems, path string, d Dist, kind valueKind, required bool, check func(float64) string) {
	if d.isZero() {
		if required {
			p.add(path, "missing (a value, a list of values or {min: X, max: Y})")
		}
		return
	}
	if len(d.Values) > 0 {
		for i, v := range d.Values {
			if msg := check(v); msg != "" {
				p.add(fmt.Sprintf("%s[%d]", path, i), "%s", msg)
			}
		}
		return
	}
	if math.IsNaN(d.Min) || math.IsNaN(d.Max) {
		p.add(path, "not a number")
		return
	}
	if d.Min == d.Max && !d.Log {
		if msg := check(d.Min); msg != "" {
			p.add(path, "%s", msg)
		}
		return
	}
	ok := true
	if msg := check(d.Min); msg != "" {
		p.add(path+".min", "%s", msg)
		ok = false
	}
	if msg := check(d.Max); msg != "" {
		p.add(path+".max", "%s", msg)
		ok = false
	}
	switch {
	case !ok:
	case d.Max < d.Min:
		p.add(path+".max", "%s is below min %s", fmtValue(kind, d.Max), fmtValue(kind, d.Min))
	case d.Log && d.Min <= 0:
		p.add(path+".log", "a log-uniform range needs a positive min")
	}
}

func fmtValue(kind valueKind, v float64) string {
	if kind == kindDuration {
		return time.Duration(v).String()
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// checkWeights reports what is wrong with w at path: a name not among
// names, a weight below zero, no positive weight.
func checkWeights(p *problems, path string, w Weights, names []string) {
	total := 0.0
	for _, o := range w {
		if !slices.Contains(names, o.Name) {
			p.add(path, "%q is not one of %s", o.Name, strings.Join(names, ", "))
			continue
		}
		if o.Weight < 0 || math.IsNaN(o.Weight) || math.IsInf(o.Weight, 0) {
			p.add(path+"."+o.Name, "%v must be a weight of 0 or more", o.Weight)
			continue
		}
		total += o.Weight
	}
	if len(w) > 0 && total <= 0 {
		p.add(path, "no option has a positive weight")
	}
}

func (f *Family) validate(p *problems) {
	if msg := checkName(f.Name); msg != "" {
		p.add("name", "%s", strings.Replace(msg, "every broker has", "every family has", 1))
	}
	checkDist(p, "duration", f.Duration, kindDuration, true, durationCheck(time.Second, MaxDuration))
	checkDist(p, "send_timeout", f.SendTimeout, kindDuration, false, durationCheck(time.Millisecond, MaxSendTimeout))
	checkDist(p, "brokers", f.Brokers, kindCount, true, between(1, MaxBrokers, "brokers in a scenario"))
	checkDist(p, "queues", f.Queues, kindCount, true, between(1, MaxQueues, "queues per broker"))
	checkDist(p, "latency.median", f.Latency.Median, kindDuration, true, latencyCheck)
	checkDist(p, "latency.tail", f.Latency.Tail, kindNumber, true, atLeast(1, "the p99 over the median"))
	if _, mhi := f.Latency.Median.bounds(); !f.Latency.Tail.isZero() {
		if _, thi := f.Latency.Tail.bounds(); mhi*thi > float64(MaxLatency) {
			p.add("latency.tail", "a median of %s times %v is longer than %s", time.Duration(mhi), thi, MaxLatency)
		}
	}
	checkDist(p, "capacity.per_broker", f.Capacity.PerBroker, kindNumber, true, between(1e-3, MaxRate, "sends per second"))
	if u := f.Capacity.Uneven; math.IsNaN(u) || u < 0 || u > 1 {
		p.add("capacity.uneven", "%v must be in [0, 1]: the share of runs with uneven capacities", u)
	}
	checkDist(p, "capacity.spread", f.Capacity.Spread, kindNumber, f.Capacity.Uneven > 0, atLeast(1, "the largest capacity per queue over the smallest"))
	if f.Capacity.Uneven == 0 && !f.Capacity.Spread.isZero() {
		p.add("capacity.spread", "a spread without uneven (the share of runs with uneven capacities) is never drawn")
	}
	checkWeights(p, "flow_control", f.FlowControl, flowModels)
	if f.FlowControl.weight(FlowQueue) > 0 {
		checkDist(p, "queue_wait", f.QueueWait, kindDuration, true, durationCheck(time.Millisecond, MaxSendTimeout))
	}
	checkWeights(p, "load.model", f.Load.Model, []string{string(LoadClosed), string(LoadOpen)})
	if len(f.Load.Model) == 0 {
		p.add("load.model", "missing (closed, open, or a mapping of both to weights)")
	}
	if f.Load.Model.weight(string(LoadClosed)) > 0 {
		checkDist(p, "load.senders", f.Load.Senders, kindCount, true, between(1, MaxSenders, "senders"))
	} else if !f.Load.Senders.isZero() && len(f.Load.Model) > 0 {
		p.add("load.senders", "only a closed load has senders, and the model draws none")
	}
	checkDist(p, "load.utilization", f.Load.Utilization, kindNumber, true, between(1e-6, 100, "the offered rate over the cluster's capacity"))
	if mr := f.Load.MaxRate; math.IsNaN(mr) || mr < 0 || mr > MaxRate {
		p.add("load.max_rate", "%v must be 0 (no bound) or a positive number of sends per second up to %v", mr, MaxRate)
	}
	// The largest run the family can draw must be one a scenario may be.
	_, bhi := f.Brokers.bounds()
	_, chi := f.Capacity.PerBroker.bounds()
	_, uhi := f.Load.Utilization.bounds()
	_, dhi := f.Duration.bounds()
	rate := bhi * chi * uhi
	if f.Load.MaxRate > 0 {
		rate = min(rate, f.Load.MaxRate)
	}
	switch {
	case rate > MaxRate:
		p.add("load", "the family can draw %.0f sends per second (brokers x capacity.per_broker x utilization), more than %v: lower them or set max_rate", rate, MaxRate)
	case rate*time.Duration(dhi).Seconds() > MaxSends:
		p.add("load", "the family can draw %.0f sends per second for %s, %.0f sends, more than %d: lower them or set max_rate", rate, time.Duration(dhi), rate*time.Duration(dhi).Seconds(), MaxSends)
	}
	f.validateFaults(p)
}

func (f *Family) validateFaults(p *problems) {
	ff := &f.Faults
	checkDist(p, "faults.count", ff.Count, kindCount, false, between(0, MaxEvents, "faults per run"))
	if _, hi := ff.Count.bounds(); hi == 0 {
		if len(ff.States) > 0 || !ff.For.isZero() {
			p.add("faults.count", "missing or 0, yet the faults have states or lengths: how many faults a run draws")
		}
		return // no fault: nothing else is drawn
	}
	checkDist(p, "faults.at", ff.At, kindNumber, false, func(v float64) string {
		if v < 0 || v >= 1 {
			return fmt.Sprintf("%v must be in [0, 1): when the fault starts, as a share of the duration", v)
		}
		return ""
	})
	checkDist(p, "faults.for", ff.For, kindDuration, true, durationCheck(faultResolution, MaxDuration))
	probes := append([]string{probeAutoName}, probeList2()...)
	checkWeights(p, "faults.probe", ff.Probe, probes)
	if len(ff.States) == 0 {
		p.add("faults.states", "missing (the states a fault may take: %s)", stateList())
		return
	}
	total := 0.0
	for _, st := range ff.States {
		path := "faults.states." + string(st.State)
		kind, ok := faultKinds[st.State]
		if !ok {
			p.add("faults.states", "%q is not one of %s", st.State, stateList())
			continue
		}
		if st.Weight < 0 || math.IsNaN(st.Weight) || math.IsInf(st.Weight, 0) {
			p.add(path+".weight", "%v must be a weight of 0 or more", st.Weight)
		} else {
			total += st.Weight
		}
		checkWeights(p, path+".probe", st.Probe, probes)
		if kind.routeOnly && len(st.Probe) > 0 {
			p.add(path+".probe", "a %s fault changes only the route, not what probes answer: leave the field out", st.State)
		}
		for _, param := range kind.params {
			d, given := st.Params[param.name]
			if !given && param.def == nil {
				p.add(path+"."+param.name, "missing (a %s fault's %s)", st.State, param.name)
				continue
			}
			if given {
				checkDist(p, path+"."+param.name, d, param.kind, true, param.check)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(st.Params)) {
			if !slices.ContainsFunc(kind.params, func(fp faultParam) bool { return fp.name == name }) {
				p.add(path+"."+name, "a %s fault has no parameter %s", st.State, name)
			}
		}
	}
	if total <= 0 {
		p.add("faults.states", "no state has a positive weight")
	}
}

func probeList2() []string {
	out := make([]string, len(probeAnswers))
	for i, a := range probeAnswers {
		out[i] = string(a)
	}
	return out
}
