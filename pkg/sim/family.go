package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// ErrInvalidFamily is what every family error matches with errors.Is.
var ErrInvalidFamily = errors.New("sim: invalid scenario family")

// MaxFamilyRuns bounds the runs one family run may draw.
const MaxFamilyRuns = 100_000

// Family describes scenarios by distributions instead of values: how many
// brokers, their latency and capacity, the flow-control model, the load,
// the duration and the faults. Draw turns it into one Scenario per run,
// deterministically: run i's scenario depends only on the family, the
// family seed and i. Load one from YAML with ParseFamily or LoadFamily, or
// build it in code and check it with Validate. A Family is read-only while
// a draw uses it.
type Family struct {
	// Name labels the family; a drawn scenario is named NAME-RUN. Letters,
	// digits and . _ : - only (it names kept files).
	Name string
	// Duration is the scenario's duration (Dist of nanoseconds), drawn to
	// the second.
	Duration Dist
	// SendTimeout is every send's budget (nanoseconds, to the
	// millisecond); the zero Dist leaves the scenario's default (3 s).
	SendTimeout Dist
	// Brokers is the number of brokers, Queues each broker's queues.
	Brokers, Queues Dist
	// Latency is every broker's healthy latency.
	Latency FamilyLatency
	// Capacity is how many sends per second the brokers can take.
	Capacity FamilyCapacity
	// FlowControl weighs the flow-control models: FlowNone, FlowReject,
	// FlowQueue (Weights names them).
	FlowControl Weights
	// QueueWait is the send queue's wait (FlowQueue only; nanoseconds, to
	// the millisecond).
	QueueWait Dist
	// Load is how the sends arrive, and how many.
	Load FamilyLoad
	// Faults are the events drawn on the brokers.
	Faults FamilyFaults
}

// FamilyLatency draws the brokers' latency: a median (nanoseconds, drawn
// to the microsecond) and the p99 as a multiple of it (Tail >= 1).
type FamilyLatency struct {
	Median, Tail Dist
}

// FamilyCapacity draws the brokers' capacity. The cluster's is brokers x
// PerBroker sends per second, split in proportion to each broker's queues
// (round robin's share of the sends: equal brokers are equally loaded by
// it), or, with probability Uneven, unevenly: each broker's share is also
// multiplied by a factor drawn log-uniformly between 1 and a Spread drawn
// for the run, so the largest capacity per queue is at most Spread times
// the smallest, and round robin offers the weakest broker up to Spread
// times the utilization of the strongest.
type FamilyCapacity struct {
	PerBroker Dist
	Uneven    float64
	Spread    Dist
}

// The flow-control models a family draws.
const (
	// FlowNone: brokers without a capacity (they accept every send).
	FlowNone = "none"
	// FlowReject: a capacity, the excess answered SYSTEM_BUSY at once
	// (Broker.Capacity without QueueWait).
	FlowReject = "reject"
	// FlowQueue: a capacity served from a send queue that answers
	// SYSTEM_BUSY after QueueWait (Broker.QueueWait).
	FlowQueue = "queue"
)

var flowModels = []string{FlowNone, FlowReject, FlowQueue}

// FamilyLoad draws the load: open or closed (Model weighs LoadClosed and
// LoadOpen), the closed load's senders, and the offered rate as a share of
// the cluster's capacity (Utilization: 0.8 offers 80% of the brokers'
// sends per second together). MaxRate, when positive, bounds the rate: a
// run whose rate would exceed it gets every broker's capacity scaled down
// so that Utilization holds at MaxRate (this bounds the cost of a large
// cluster's runs).
type FamilyLoad struct {
	Model       Weights
	Senders     Dist
	Utilization Dist
	MaxRate     float64
}

// FamilyFaults draws the events: Count of them (at most one per broker,
// each on another broker), each in a state drawn from States by weight,
// starting at a share At of the duration (in [0, 1)) and lasting For
// (nanoseconds; both to 100 ms; cut at the run's end), its probe answer
// drawn from Probe (ProbeAuto named "auto"; no weights: auto) unless the
// state has weights of its own.
type FamilyFaults struct {
	Count  Dist
	At     Dist
	For    Dist
	Probe  Weights
	States []FamilyState
}

// FamilyState is one state a fault may take: its weight among the states,
// its parameters (by the names faultKinds gives the state: slow's median
// and tail, busy's rate and code, flapping's period, stall's period and
// length; gone has none) and, when set, its own
// probe weights.
type FamilyState struct {
	State  State
	Weight float64
	Params map[string]Dist
	Probe  Weights
}

// Dist is a distribution of numbers: one of Values with equal chances
// when there are some; else the range [Min, Max], drawn uniformly, or
// log-uniformly when Log is set (Min > 0); Min == Max is that one value.
// An integer field draws an integer of the range, each equally likely (or
// log-uniformly spread). Durations are in nanoseconds. Every draw takes
// one number from the run's random stream, so changing one field's
// distribution changes no other field's draws.
type Dist struct {
	Min, Max float64
	Log      bool
	Values   []float64
}

// Fixed returns the Dist of the one value v.
func Fixed(v float64) Dist { return Dist{Min: v, Max: v} }

// Range returns the Dist of [lo, hi], uniform.
func Range(lo, hi float64) Dist { return Dist{Min: lo, Max: hi} }

// draw returns a value of d.
func (d Dist) draw(r *rand.Rand) float64 {
	u := r.Float64()
	switch {
	case len(d.Values) > 0:
		return d.Values[min(int(u*float64(len(d.Values))), len(d.Values)-1)]
	case d.Max <= d.Min:
		return d.Min
	case d.Log:
		return d.Min * math.Pow(d.Max/d.Min, u)
	}
	return d.Min + u*(d.Max-d.Min)
}

// drawInt returns an integer of d: a value of Values, or of [Min, Max]
// with each integer as likely (log: each as likely as its share of the
// log-scaled range).
func (d Dist) drawInt(r *rand.Rand) int {
	if len(d.Values) > 0 || d.Max <= d.Min {
		return int(math.Round(d.draw(r)))
	}
	lo, hi := math.Ceil(d.Min), math.Floor(d.Max)
	u := r.Float64()
	var v float64
	if d.Log && lo > 0 {
		v = math.Floor(lo * math.Pow((hi+1)/lo, u))
	} else {
		v = math.Floor(lo + u*(hi-lo+1))
	}
	return int(min(max(v, lo), hi))
}

// drawDuration returns a duration of d rounded to res, at least res.
func (d Dist) drawDuration(r *rand.Rand, res time.Duration) time.Duration {
	v := time.Duration(d.draw(r)).Round(res)
	if v < res && !d.isZero() {
		v = res
	}
	return v
}

func (d Dist) isZero() bool { return d.Min == 0 && d.Max == 0 && !d.Log && len(d.Values) == 0 }

// bounds returns the smallest and the largest value d draws.
func (d Dist) bounds() (lo, hi float64) {
	if len(d.Values) > 0 {
		return slices.Min(d.Values), slices.Max(d.Values)
	}
	return d.Min, max(d.Min, d.Max)
}

// Weighted is one option of a weighted draw.
type Weighted struct {
	Name   string
	Weight float64
}

// Weights are options drawn with chances in proportion to their weights,
// in the order given.
type Weights []Weighted

func (w Weights) draw(r *rand.Rand) string {
	u := r.Float64()
	total := 0.0
	for _, o := range w {
		total += o.Weight
	}
	at := u * total
	last := ""
	for _, o := range w {
		if o.Weight <= 0 {
			continue
		}
		last = o.Name
		if at < o.Weight {
			return o.Name
		}
		at -= o.Weight
	}
	return last
}

// weight returns the weight of name (0 when absent).
func (w Weights) weight(name string) float64 {
	for _, o := range w {
		if o.Name == name {
			return o.Weight
		}
	}
	return 0
}

// faultParam is one parameter of a fault state in a family: its name, what
// it is and its range, and its default (nil: the family must give it).
type faultParam struct {
	name string
	kind valueKind
	// check returns what is wrong with one value it could draw, or "".
	check func(v float64) string
	def   *Dist
}

// faultKind is what a family knows of a fault state: its parameters, and
// how their drawn values (in the order of params) set the event.
type faultKind struct {
	params []faultParam
	apply  func(e *Event, v []float64)
	// routeOnly: the state changes the route, not what probes answer, so a
	// fault in it draws no probe answer (and a family may give it none).
	routeOnly bool
}

// faultKinds holds every state an event may have (TestFamilyKnowsEveryState
// keeps it so). A new state is one more entry: its parameters, their ranges
// and how they fill the Event.
var faultKinds = map[State]faultKind{
	StateDown:      {},
	StateBlackhole: {},
	StateSlow: {
		params: []faultParam{
			{name: "median", kind: kindDuration, check: latencyCheck},
			{name: "tail", kind: kindNumber, check: atLeast(1, "the p99 is at least the median"), def: ptr(Fixed(3))},
		},
		apply: func(e *Event, v []float64) {
			m := time.Duration(v[0]).Round(time.Microsecond)
			m = max(m, time.Microsecond)
			e.Latency = Latency{Median: m, P99: max(m, time.Duration(float64(m)*v[1]).Round(time.Microsecond))}
		},
	},
	StateBusy: {
		params: []faultParam{
			{name: "rate", kind: kindNumber, check: share},
			{name: "code", kind: kindCount, check: atLeast(1, "a response code"), def: ptr(Fixed(SystemBusy))},
		},
		apply: func(e *Event, v []float64) { e.Rate, e.Code = v[0], int(v[1]) },
	},
	StateFlapping: {
		params: []faultParam{{name: "period", kind: kindDuration, check: durationCheck(time.Millisecond, MaxDuration)}},
		apply: func(e *Event, v []float64) {
			e.Period = min(max(time.Duration(v[0]).Round(time.Millisecond), time.Millisecond), e.For)
		},
	},
	StateStall: {
		params: []faultParam{
			{name: "period", kind: kindDuration, check: durationCheck(time.Millisecond, MaxDuration)},
			{name: "length", kind: kindDuration, check: durationCheck(time.Millisecond, MaxDuration)},
		},
		// A period longer than the fault is cut to it; a stall longer than
		// its period is cut to the period (a broker stalled throughout).
		apply: func(e *Event, v []float64) {
			e.Period = min(max(time.Duration(v[0]).Round(time.Millisecond), time.Millisecond), e.For)
			e.Length = min(max(time.Duration(v[1]).Round(time.Millisecond), time.Millisecond), e.Period)
		},
	},
	StateGone: {routeOnly: true},
}

func ptr[T any](v T) *T { return &v }

// valueKind says how a Dist's values are written: integers, numbers or
// durations.
type valueKind int

const (
	kindCount valueKind = iota
	kindNumber
	kindDuration
)

// Drawn is one run of a family: the scenario drawn, with what the family
// drew for it that the scenario does not say in so many words.
type Drawn struct {
	// Run is the run's number, from 1.
	Run int
	// Scenario is the drawn scenario, seed included: run it (or write it
	// with Scenario.YAML) to replay the run.
	Scenario *Scenario
	// Flow is the flow-control model (FlowNone, FlowReject, FlowQueue).
	Flow string
	// Spread is the ratio of the largest broker's capacity per queue to the
	// smallest's (1 for equal capacities): how much more round robin loads
	// the weakest broker than the strongest.
	Spread float64
	// Utilization is the offered rate over the cluster's capacity.
	Utilization float64
}

// String says in a few words what was drawn: "7 brokers, 3.1ms x6.2,
// queue 200ms, uneven x3.4, closed 64 senders, 82% = 2400/s, 1m12s: down,
// slow, busy/probe reachable".
func (d *Drawn) String() string {
	sc := d.Scenario
	var b strings.Builder
	fmt.Fprintf(&b, "%d brokers", len(sc.Brokers))
	l := sc.Brokers[0].Latency
	fmt.Fprintf(&b, ", %s x%.1f", l.Median, float64(l.P99)/float64(l.Median))
	switch d.Flow {
	case FlowNone:
		b.WriteString(", no flow control")
	case FlowReject:
		b.WriteString(", reject")
	case FlowQueue:
		fmt.Fprintf(&b, ", queue %s", sc.Brokers[0].QueueWait)
	}
	if d.Spread > 1 {
		fmt.Fprintf(&b, ", uneven x%.1f", d.Spread)
	}
	if sc.open() {
		b.WriteString(", open")
	} else {
		fmt.Fprintf(&b, ", closed %d senders", sc.Senders)
	}
	fmt.Fprintf(&b, ", %.0f%% = %g/s, %s", 100*d.Utilization, sc.Rate, sc.Duration)
	writeFaults(&b, sc.Events, false)
	return b.String()
}

// Draw draws run (from 1) of the family at the family seed: the same
// family, seed and run always give the same scenario. It returns an error
// when the family is invalid (Validate's).
func (f *Family) Draw(seed uint64, run int) (*Drawn, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f.draw(seed, run)
}

func (f *Family) draw(seed uint64, run int) (*Drawn, error) {
	r := rand.New(rand.NewPCG(splitmix(seed, familyStream), splitmix(seed, familyStream+uint64(run))))
	// The order of the draws below is part of what a family seed means:
	// keep it, and add new draws at the end.
	n := f.Brokers.drawInt(r)
	duration := f.Duration.drawDuration(r, time.Second)
	timeout := f.SendTimeout.drawDuration(r, time.Millisecond)
	median := max(f.Latency.Median.drawDuration(r, time.Microsecond), time.Microsecond)
	tail := f.Latency.Tail.draw(r)
	flow := f.FlowControl.draw(r)
	queueWait := f.QueueWait.drawDuration(r, time.Millisecond)
	perBroker := f.Capacity.PerBroker.draw(r)
	uneven := r.Float64() < f.Capacity.Uneven
	spread := f.Capacity.Spread.draw(r)
	load := Load(f.Load.Model.draw(r))
	senders := f.Load.Senders.drawInt(r)
	util := f.Load.Utilization.draw(r)
	scSeed := r.Uint64()%1_000_000 + 1

	lat := Latency{Median: median, P99: max(median, time.Duration(float64(median)*tail).Round(time.Microsecond))}
	width := len(fmt.Sprint(n))
	brokers := make([]Broker, n)
	factors := make([]float64, n)
	sum := 0.0
	for i := range brokers {
		brokers[i] = Broker{Name: fmt.Sprintf("broker-%0*d", width, i+1), Queues: f.Queues.drawInt(r), Latency: lat}
		u := r.Float64()
		// Round robin sends a broker its queues' share of the sends: the
		// capacity follows it, times the uneven factor.
		factors[i] = float64(brokers[i].Queues)
		if uneven {
			factors[i] *= math.Pow(spread, u)
		}
		sum += factors[i]
	}
	total := perBroker * float64(n)
	rate := util * total
	if f.Load.MaxRate > 0 && rate > f.Load.MaxRate {
		total *= f.Load.MaxRate / rate
		rate = f.Load.MaxRate
	}
	capacity := 0.0
	lo, hi := math.Inf(1), 0.0
	for i := range brokers {
		c := max(1, math.Round(total*factors[i]/sum))
		capacity += c
		perQueue := c / float64(brokers[i].Queues)
		lo, hi = min(lo, perQueue), max(hi, perQueue)
		if flow != FlowNone {
			brokers[i].Capacity = c
			if flow == FlowQueue {
				brokers[i].QueueWait = queueWait
			}
		}
	}
	rate = max(1, math.Round(rate))
	sc := &Scenario{
		Name:        fmt.Sprintf("%s-%d", f.Name, run),
		Duration:    duration,
		Seed:        scSeed,
		Load:        load,
		Rate:        rate,
		SendTimeout: timeout,
		Brokers:     brokers,
	}
	if load == LoadClosed {
		sc.Senders = senders
	}

	// The faults: each on a broker of its own.
	k := min(f.Faults.Count.drawInt(r), n)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for j := range k {
		pick := j + min(int(r.Float64()*float64(n-j)), n-j-1)
		order[j], order[pick] = order[pick], order[j]
		st := f.state(State(f.stateWeights().draw(r)))
		at := time.Duration(f.Faults.At.draw(r) * float64(duration)).Truncate(faultResolution)
		at = min(max(at, 0), duration-faultResolution)
		length := min(f.Faults.For.drawDuration(r, faultResolution), duration-at)
		e := Event{Broker: brokers[order[j]].Name, At: at, For: length, State: st.State}
		kind := faultKinds[st.State]
		values := make([]float64, len(kind.params))
		for p, param := range kind.params {
			d, ok := st.Params[param.name]
			if !ok {
				d = *param.def
			}
			values[p] = d.draw(r)
		}
		if kind.apply != nil {
			kind.apply(&e, values)
		}
		probes := f.Faults.Probe
		if len(st.Probe) > 0 {
			probes = st.Probe
		}
		if len(probes) > 0 {
			// Drawn for every fault, so that a state's probe answers do not
			// shift the draws of the faults after it.
			if pr := probeOf(probes.draw(r)); !kind.routeOnly {
				e.Probe = pr
			}
		}
		sc.Events = append(sc.Events, e)
	}
	slices.SortStableFunc(sc.Events, func(a, b Event) int { return int(a.At - b.At) })
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("sim: family %s drew an invalid scenario for run %d (a gap in the family's checks): %w", f.Name, run, err)
	}
	d := &Drawn{Run: run, Scenario: sc, Flow: flow, Spread: 1, Utilization: rate / capacity}
	if uneven {
		d.Spread = hi / lo
	}
	return d, nil
}

// faultResolution is what a fault's start and length are drawn to.
const faultResolution = 100 * time.Millisecond

// familyStream keeps a family's random streams apart from the scenario's.
const familyStream = 0xfa111e5 << 32

func (f *Family) stateWeights() Weights {
	w := make(Weights, len(f.Faults.States))
	for i, s := range f.Faults.States {
		w[i] = Weighted{Name: string(s.State), Weight: s.Weight}
	}
	return w
}

func (f *Family) state(s State) FamilyState {
	for _, st := range f.Faults.States {
		if st.State == s {
			return st
		}
	}
	return FamilyState{State: s}
}

func probeOf(name string) Probe {
	if name == probeAutoName {
		return ProbeAuto
	}
	return Probe(name)
}

// probeAutoName names ProbeAuto among probe weights.
const probeAutoName = "auto"
