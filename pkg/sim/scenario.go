package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mqfault/mqfault/internal/input/yamldoc"
)

// ErrInvalidScenario is what every scenario error matches with errors.Is.
var ErrInvalidScenario = errors.New("sim: invalid scenario")

// Limits on what a scenario may ask for, so that a typo cannot make a run
// take hours or all memory.
const (
	MaxDuration    = 24 * time.Hour   // virtual time of one run
	MaxSendTimeout = 10 * time.Minute // a send's whole budget
	MaxLatency     = time.Hour        // a latency median or p99
	MaxSenders     = 10000
	MaxRate        = 1e6 // sends per second, all senders together
	MaxSends       = 5_000_000
	MaxBrokers     = 256
	MaxQueues      = 1024 // per broker
	MaxEvents      = 10000
	MaxProducers   = 10000
	// MaxProducerQueues bounds the producers times the queues of every
	// broker: each producer of a fleet keeps its own route and fault state.
	MaxProducerQueues = 1 << 19
	// MaxProducerBrokerSeconds bounds the producers times the brokers times
	// the duration in seconds: each producer's detector probes every broker
	// of its fault table each round.
	MaxProducerBrokerSeconds = 1e7
	// MaxSendQueues bounds the sends (rate x duration) times the queues of
	// every broker: a pick may visit every queue of the route (the
	// isolation cap's pass over the route does, after each change of the
	// fault table), so in the worst case (every broker failing) a run's
	// time grows with this product.
	MaxSendQueues = 2e9
	// MaxSecondBrokers bounds the seconds a run records (its duration plus
	// a send timeout, plus one) times the brokers: the per-second series
	// keep a count per broker and second, per strategy.
	MaxSecondBrokers = 1 << 22
	// MaxInFlight bounds the sends in flight at once under an open load
	// (per strategy). An arrival past it is shed: it fails at once, as a
	// producer's bound on outstanding requests refuses it, so a retry
	// storm cannot grow the run's memory without bound.
	MaxInFlight = 65536
)

// Load is how sends arrive.
type Load string

// The loads a scenario may have.
const (
	// LoadClosed (the default) is a closed loop: Senders senders, each
	// starting a send every Senders/Rate seconds or when its previous send
	// ends if that is later. Slow sends slow the traffic down.
	LoadClosed Load = "closed"
	// LoadOpen is an open loop: sends start as a Poisson process at Rate,
	// whatever happened to earlier sends, so slow sends and retries pile
	// up in flight instead of slowing the traffic down.
	LoadOpen Load = "open"
)

// Scenario is one simulated run's world: how long it lasts, how hard the
// producer sends, the brokers, and the faults scheduled on them. Load it from
// YAML with Parse or LoadFile, or build it in code and check it with
// Validate. A Scenario is read-only while a run uses it.
type Scenario struct {
	// Name labels the scenario in reports.
	Name string
	// Duration is the virtual time during which sends start. Sends in
	// flight at the end are finished (up to SendTimeout later).
	Duration time.Duration
	// Seed drives every random draw (latencies, busy answers, the
	// round-robin index). Equal seeds give equal runs.
	Seed uint64
	// Load is how sends arrive: LoadClosed (also when empty) or LoadOpen.
	Load Load
	// Senders is the number of concurrent senders (producer threads) of a
	// closed load. An open load has none (it must be 0).
	Senders int
	// Rate is the sends per second. Under a closed load, of all senders
	// together: each sender starts a send every Senders/Rate seconds, or
	// when its previous send ends if that is later (a sender never catches
	// up on missed sends). Under an open load, the mean rate of the
	// Poisson process of sends.
	Rate float64
	// SendTimeout is every send's whole budget, retries included
	// (producer.Config.Timeout; the reference's 3 s when zero).
	SendTimeout time.Duration
	// Producers is the number of producers, 1 when zero: a fleet of
	// independent producers, each with its own strategy (fault table,
	// isolation timers, detector), send loop (retry budget) and route,
	// sharing the brokers. Under a closed load sender i is producer i mod
	// Producers's, so there are at least as many senders; under an open
	// load each arrival is a producer's at random (each producer's
	// arrivals a Poisson process at Rate/Producers).
	Producers int
	// RoutePoll is how often each producer asks the name server for the
	// route (the client's pollNameServerInterval; 30 s when zero), each
	// producer at a phase of its own drawn from the seed. A producer learns
	// of a broker that left (a gone event) or joined (Broker.Joins) the
	// route only at its next poll. Without route changes no poll is made.
	RoutePoll time.Duration
	// Brokers are the topic's brokers.
	Brokers []Broker
	// Events change brokers' states for a while.
	Events []Event
}

// Broker is one simulated broker of the topic.
type Broker struct {
	// Name is the broker name (letters, digits and . _ : -).
	Name string
	// Queues is the number of the topic's write queues on this broker.
	Queues int
	// Latency is how long the broker takes to answer when it is up.
	Latency Latency
	// Capacity is the sends per second the broker accepts (a token bucket
	// holding Capacity/20 tokens, 50 ms worth, and at least 200); the excess
	// is answered with
	// SYSTEM_BUSY (code 2), as a flow-controlled RocketMQ broker does.
	// Zero means unlimited.
	Capacity float64
	// Joins, when positive, is when the broker joins the name server's
	// route: before it no producer's route names it; each producer learns
	// of it at its first route poll from then on.
	Joins time.Duration
	// QueueWait, when positive, replaces the token bucket by RocketMQ's
	// send queue: the broker serves Capacity sends per second in arrival
	// order, a send waits in the queue until the ones ahead of it are
	// served (its latency grows by the wait), and a send that would wait
	// longer than QueueWait is answered SYSTEM_BUSY with remark
	// [TIMEOUT_CLEAN_QUEUE] after waiting QueueWait (the broker's
	// waitTimeMillsInSendQueue, 200 ms by default). It needs a Capacity.
	QueueWait time.Duration
}

// Latency is a log-normal latency distribution given by its median and its
// 99th percentile. P99 equal to Median makes it constant.
type Latency struct {
	Median time.Duration
	P99    time.Duration
}

// State is what a broker does during an Event.
type State string

// The broker states. A broker outside every event window is up.
const (
	// StateUp answers after a draw of the broker's latency.
	StateUp State = "up"
	// StateDown refuses connections: every attempt fails after 1 ms with a
	// transport error (connection refused).
	StateDown State = "down"
	// StateBlackhole never answers: every attempt runs into its timeout.
	StateBlackhole State = "blackhole"
	// StateSlow answers after a draw of the event's latency.
	StateSlow State = "slow"
	// StateBusy answers with the event's response code at the event's rate,
	// and normally otherwise.
	StateBusy State = "busy"
	// StateFlapping alternates: down for the first half of every period,
	// up for the second.
	StateFlapping State = "flapping"
	// StateStall stops the broker's store for Length of every Period (from
	// the event's start): a send arriving during a stall waits in the
	// broker's send queue (QueueWait, or RocketMQ's default 200 ms when the
	// broker has none) and is served when the stall ends, or, when it would
	// wait longer than that, is answered SYSTEM_BUSY with
	// [TIMEOUT_CLEAN_QUEUE] after waiting it out, naming the few sends
	// queued ahead of it: push-back from a broker that is not overloaded,
	// as a disk, page-cache, GC or replication stall gives. A stall longer
	// than RocketMQ's osPageCacheBusyTimeOutMills (1 s) turns page cache
	// busy from its first second to its end: the sends still queued then
	// are answered at once with [PCBUSY_CLEAN_QUEUE], and the sends
	// arriving after it with [REJECTREQUEST] at once. Between stalls the
	// broker is up; probes find it reachable throughout.
	StateStall State = "stall"
	// StateGone takes the broker out of the name server's route for the
	// event's window: a producer that polls the route then (RoutePoll)
	// stops sending to it, until a poll after the window finds it back.
	// It changes nothing about the broker itself, which another event may
	// put down (a killed broker leaves the route some seconds after it
	// dies) or leave up (a broker taken out of the route for maintenance).
	StateGone State = "gone"
)

// eventStates lists the states an event may set, in the order error
// messages name them.
var eventStates = []State{StateDown, StateBlackhole, StateSlow, StateBusy, StateFlapping, StateStall, StateGone}

// Probe is what the simulated detector's probe of a broker answers. By
// default it follows the broker's state: down and blackhole (and flapping
// while down) are unreachable, a blackhole's probe running into its
// timeout; up, slow and busy are reachable.
type Probe string

// The probe answers an Event may force.
const (
	ProbeAuto        Probe = ""            // follow the state
	ProbeReachable   Probe = "reachable"   // the probe succeeds
	ProbeUnreachable Probe = "unreachable" // the probe fails at once
	ProbeTimeout     Probe = "timeout"     // the probe runs into its timeout
)

var probeAnswers = []Probe{ProbeReachable, ProbeUnreachable, ProbeTimeout}

// SystemBusy is RocketMQ's SYSTEM_BUSY response code, which a broker over its
// capacity answers and which busy events answer unless told otherwise.
const SystemBusy = 2

// Event puts a broker in a state for a while: from At to At+For of virtual
// time. When windows of one broker overlap, the event listed last wins.
type Event struct {
	Broker string
	At     time.Duration
	For    time.Duration
	State  State
	// Latency is the slow state's distribution (slow only).
	Latency Latency
	// Rate is the share of attempts a busy broker answers with Code
	// (busy only), in (0, 1].
	Rate float64
	// Code is the busy state's response code (busy only; SystemBusy when
	// zero).
	Code int
	// Period is one down-then-up cycle of the flapping state, or the time
	// from one stall's start to the next (flapping and stall only).
	Period time.Duration
	// Length is how long each stall lasts, at most Period (stall only).
	Length time.Duration
	// Probe forces what detector probes of the broker answer during the
	// event (for instance a broker that accepts probes but fails sends).
	Probe Probe
}

// End returns when the event's window ends.
func (e Event) End() time.Duration { return e.At + e.For }

// FieldError says what is wrong with one field of a scenario: its path
// (such as "events[2].state"), and, for a scenario read from YAML, the line
// and column where it is. It matches ErrInvalidScenario.
type FieldError struct {
	Path   string
	Line   int // 0 when unknown
	Column int
	Msg    string
}

// Error returns "line N: path: message", without the line when it is
// unknown and without the path when the problem is the file's as a whole.
func (e *FieldError) Error() string {
	return yamldoc.Problem{Path: e.Path, Line: e.Line, Column: e.Column, Msg: e.Msg}.String()
}

// unknownField says whether the error is the decoder's for a field the
// scenario format does not have.
func (e *FieldError) unknownField() bool { return strings.HasPrefix(e.Msg, yamldoc.UnknownField) }

// Is makes errors.Is(err, ErrInvalidScenario) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidScenario }

// maxErrors bounds how many field errors one validation reports; past it
// the last line says how many more there are.
const maxErrors = 20

// problems collects field errors.
type problems struct {
	errs    []error
	dropped int                               // problems past maxErrors
	pos     func(path string) (line, col int) // nil when positions are unknown
	// skip, when set, reports the paths whose value the decoder already
	// refused: a check there would repeat the problem.
	skip func(path string) bool
	// brokersUnknown is true when some broker's name did not decode, so an
	// event naming an unknown broker may name that one.
	brokersUnknown bool
}

func (p *problems) add(path, format string, args ...any) {
	if p.skip != nil && p.skip(path) {
		return
	}
	if len(p.errs) >= maxErrors {
		p.dropped++
		return
	}
	fe := &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
	if p.pos != nil {
		fe.Line, fe.Column = p.pos(path)
	}
	p.errs = append(p.errs, fe)
}

// given says whether the scenario's YAML has a field at path (false for a
// scenario built in code, whose zero fields are unset).
func (p *problems) given(path string) bool {
	if p.pos == nil {
		return false
	}
	line, _ := p.pos(path)
	return line > 0
}

// err joins the field errors, one per line, in document order for a
// scenario read from YAML.
func (p *problems) err() error {
	errs := p.errs
	if p.pos != nil {
		// An unknown field first: a misspelt one is what the problems after
		// it (a required field missing) follow from. Then in document order.
		errs = slices.Clone(errs)
		slices.SortStableFunc(errs, func(a, b error) int {
			ea, eb := a.(*FieldError), b.(*FieldError)
			if ua, ub := ea.unknownField(), eb.unknownField(); ua != ub {
				if ua {
					return -1
				}
				return 1
			}
			return cmp.Compare(ea.Line, eb.Line)
		})
	}
	if p.dropped > 0 {
		errs = append(errs, &FieldError{Msg: fmt.Sprintf("... and %d more problems", p.dropped)})
	}
	return errors.Join(errs...)
}

// Validate checks every field of s and returns nil or an error joining one
// *FieldError per problem (errors.Is(err, ErrInvalidScenario) is true).
func (s *Scenario) Validate() error {
	var p problems
	s.validate(&p)
	return p.err()
}

func (s *Scenario) validate(p *problems) {
	if s.Name == "" {
		p.add("name", "missing (every scenario has a name)")
	}
	switch {
	case s.Duration <= 0:
		p.add("duration", "%s must be positive", s.Duration)
	case s.Duration > MaxDuration:
		p.add("duration", "%s is longer than %s", s.Duration, MaxDuration)
	}
	open, known := s.Load == LoadOpen, true
	switch s.Load {
	case "", LoadClosed, LoadOpen:
	default:
		known = false
		p.add("load", "%q is not one of %s, %s", s.Load, LoadClosed, LoadOpen)
	}
	switch {
	case !known: // whether it needs senders is unknown
	case open && s.Senders != 0:
		p.add("senders", "an open load has no senders (sends start at rate whatever earlier sends did): leave the field out")
	case open:
	case s.Senders == 0 && !p.given("senders"):
		p.add("senders", "missing (required under closed load: how many senders send at once, at least 1)")
	case s.Senders < 1:
		p.add("senders", "%d must be at least 1", s.Senders)
	case s.Senders > MaxSenders:
		p.add("senders", "%d is more than %d", s.Senders, MaxSenders)
	}
	switch {
	case open && s.Rate == 0:
		p.add("rate", "missing (an open load needs the mean sends per second of its arrivals)")
	case math.IsNaN(s.Rate) || s.Rate <= 0:
		p.add("rate", "%v must be positive (sends per second)", s.Rate)
	case s.Rate > MaxRate:
		p.add("rate", "%v is more than %v sends per second", s.Rate, MaxRate)
	case s.Duration > 0 && s.Rate*s.Duration.Seconds() > MaxSends:
		p.add("rate", "%v sends per second for %s is %.0f sends, more than %d", s.Rate, s.Duration,
			s.Rate*s.Duration.Seconds(), MaxSends)
	}
	switch {
	case s.Producers < 0:
		p.add("producers", "%d must be at least 1", s.Producers)
	case s.Producers > MaxProducers:
		p.add("producers", "%d is more than %d", s.Producers, MaxProducers)
	case known && !open && s.Senders >= 1 && s.Senders <= MaxSenders && s.Producers > s.Senders:
		p.add("producers", "%d producers need at least %d senders (sender i is producer i mod %d's), not %d",
			s.Producers, s.Producers, s.Producers, s.Senders)
	}
	switch {
	case s.RoutePoll < 0:
		p.add("route_poll", "%s must be positive", s.RoutePoll)
	case s.RoutePoll > MaxDuration:
		p.add("route_poll", "%s is longer than %s", s.RoutePoll, MaxDuration)
	}
	switch {
	case s.SendTimeout < 0:
		p.add("send_timeout", "%s must be positive", s.SendTimeout)
	case s.SendTimeout > MaxSendTimeout:
		p.add("send_timeout", "%s is longer than %s", s.SendTimeout, MaxSendTimeout)
	}
	switch {
	case len(s.Brokers) == 0:
		p.add("brokers", "missing (a scenario needs at least one broker)")
	case len(s.Brokers) > MaxBrokers:
		p.add("brokers", "%d brokers, more than %d", len(s.Brokers), MaxBrokers)
	}
	seen := make(map[string]int, len(s.Brokers))
	for i, b := range s.Brokers {
		path := fmt.Sprintf("brokers[%d]", i)
		if msg := checkName(b.Name); msg != "" {
			p.add(path+".name", "%s", msg)
		} else if j, dup := seen[b.Name]; dup {
			p.add(path+".name", "%q is also the name of brokers[%d]", b.Name, j)
		} else {
			seen[b.Name] = i
		}
		switch {
		case b.Queues < 1:
			p.add(path+".queues", "%d must be at least 1", b.Queues)
		case b.Queues > MaxQueues:
			p.add(path+".queues", "%d is more than %d", b.Queues, MaxQueues)
		}
		b.Latency.validate(p, path+".latency")
		if math.IsNaN(b.Capacity) || math.IsInf(b.Capacity, 0) || b.Capacity < 0 {
			p.add(path+".capacity", "%v must be 0 (unlimited) or a positive number of sends per second", b.Capacity)
		}
		switch {
		case b.Joins < 0:
			p.add(path+".joins", "%s must not be negative", b.Joins)
		case s.Duration > 0 && b.Joins >= s.Duration:
			p.add(path+".joins", "%s is not before the end of the scenario (%s): the broker would never be in the route", b.Joins, s.Duration)
		}
		switch {
		case b.QueueWait < 0:
			p.add(path+".queue_wait", "%s must be positive (how long a send may wait in the broker's queue)", b.QueueWait)
		case b.QueueWait > MaxSendTimeout:
			p.add(path+".queue_wait", "%s is longer than %s", b.QueueWait, MaxSendTimeout)
		case b.QueueWait > 0 && b.Capacity == 0:
			p.add(path+".queue_wait", "a send queue needs a capacity (the sends per second the broker serves)")
		}
	}
	s.validateSize(p)
	if len(s.Events) > MaxEvents {
		p.add("events", "%d events, more than %d", len(s.Events), MaxEvents)
		return
	}
	for i, e := range s.Events {
		e.validate(p, fmt.Sprintf("events[%d]", i), seen, s.Duration)
	}
	if len(s.Brokers) > 0 && !slices.ContainsFunc(s.Brokers, s.routedAtStart) {
		p.add("brokers", "no broker is in the route at the start (each joins later or is gone at 0s): a producer starts with the route")
	}
}

// routedAtStart reports whether b is in the name server's route at time 0.
func (s *Scenario) routedAtStart(b Broker) bool {
	return b.Joins <= 0 && !slices.ContainsFunc(s.Events, func(e Event) bool {
		return e.State == StateGone && e.Broker == b.Name && e.At == 0
	})
}

// validateSize refuses a scenario whose fields are each within their
// limits but whose run would take too long or too much memory: a product
// of sizes past MaxSendQueues or MaxSecondBrokers. It checks a product only
// when each of its factors is valid, and names the factors.
func (s *Scenario) validateSize(p *problems) {
	rateOK := !math.IsNaN(s.Rate) && s.Rate > 0 && s.Rate <= MaxRate
	durationOK := s.Duration > 0 && s.Duration <= MaxDuration
	brokersOK := len(s.Brokers) > 0 && len(s.Brokers) <= MaxBrokers
	queuesOK := brokersOK
	for _, b := range s.Brokers {
		queuesOK = queuesOK && b.Queues >= 1 && b.Queues <= MaxQueues
	}
	if rateOK && durationOK && queuesOK {
		sends, queues := s.Rate*s.Duration.Seconds(), s.Queues()
		if sends <= MaxSends && sends*float64(queues) > MaxSendQueues {
			p.add("", "the scenario is too large: rate x duration x queues is %.0f sends x %d queues = %.3g, more than %.0e "+
				"(in the worst case a pick visits every queue): lower the rate, the duration or the queues",
				sends, queues, sends*float64(queues), float64(MaxSendQueues))
		}
	}
	if queuesOK && s.Producers > 1 && s.Producers <= MaxProducers {
		if pq := s.Producers * s.Queues(); pq > MaxProducerQueues {
			p.add("", "the scenario is too large: producers x queues is %d producers x %d queues = %d, more than %d "+
				"(each producer keeps its own route and fault state): use fewer producers or queues",
				s.Producers, s.Queues(), pq, MaxProducerQueues)
		}
		if pbs := float64(s.Producers) * float64(len(s.Brokers)) * s.Duration.Seconds(); durationOK && pbs > MaxProducerBrokerSeconds {
			p.add("", "the scenario is too large: producers x brokers x duration is %d producers x %d brokers x %s = %.3g, more than %.0e "+
				"(each producer's detector probes every broker each round): use fewer producers or brokers, or a shorter duration",
				s.Producers, len(s.Brokers), s.Duration, pbs, float64(MaxProducerBrokerSeconds))
		}
	}
	if durationOK && brokersOK && s.SendTimeout >= 0 && s.SendTimeout <= MaxSendTimeout {
		seconds := s.seconds()
		if cells := seconds * len(s.Brokers); cells > MaxSecondBrokers {
			p.add("", "the scenario is too large: (duration + send timeout) x brokers is %d seconds x %d brokers = %d, more than %d "+
				"(the series keep a count per broker and second): shorten the duration or use fewer brokers",
				seconds, len(s.Brokers), cells, MaxSecondBrokers)
		}
	}
}

func checkName(name string) string {
	if name == "" {
		return "missing (every broker has a name)"
	}
	if len(name) > 64 {
		return fmt.Sprintf("%q is longer than 64 characters", name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r)
		if !ok {
			return fmt.Sprintf("%q may hold only letters, digits and . _ : -", name)
		}
	}
	return ""
}

func (l Latency) validate(p *problems, path string) {
	switch {
	case l.Median == 0 && l.P99 == 0:
		p.add(path, "missing (want {median: 3ms, p99: 20ms})")
	case l.Median <= 0:
		p.add(path+".median", "%s must be positive", l.Median)
	case l.Median > MaxLatency:
		p.add(path+".median", "%s is longer than %s", l.Median, MaxLatency)
	case l.P99 < l.Median:
		p.add(path+".p99", "%s is below the median %s", l.P99, l.Median)
	case l.P99 > MaxLatency:
		p.add(path+".p99", "%s is longer than %s", l.P99, MaxLatency)
	}
}

func (e Event) validate(p *problems, path string, brokers map[string]int, duration time.Duration) {
	if e.Broker == "" {
		p.add(path+".broker", "missing (which broker the event happens to)")
	} else if _, ok := brokers[e.Broker]; !ok && !p.brokersUnknown {
		p.add(path+".broker", "%q is not one of the scenario's brokers", e.Broker)
	}
	switch {
	case e.At < 0:
		p.add(path+".at", "%s must not be negative", e.At)
	case e.At >= duration && duration > 0:
		p.add(path+".at", "%s is not before the end of the scenario (%s)", e.At, duration)
	}
	switch {
	case e.For <= 0:
		p.add(path+".for", "%s must be positive", e.For)
	case e.At >= 0 && e.At < duration && e.End() > duration:
		p.add(path+".for", "the window %s..%s ends after the scenario (%s)", e.At, e.End(), duration)
	}
	known := false
	for _, st := range eventStates {
		known = known || e.State == st
	}
	if !known {
		if e.State == "" {
			p.add(path+".state", "missing (one of %s)", stateList())
		} else {
			p.add(path+".state", "%q is not one of %s", e.State, stateList())
		}
	}
	if e.State == StateSlow {
		e.Latency.validate(p, path+".latency")
	} else if e.Latency != (Latency{}) && known {
		p.add(path+".latency", "only a slow event has a latency, not %s", e.State)
	}
	if e.State == StateBusy {
		if math.IsNaN(e.Rate) || e.Rate <= 0 || e.Rate > 1 {
			p.add(path+".rate", "%v must be in (0, 1]: the share of attempts answered with the code", e.Rate)
		}
		if e.Code < 0 {
			p.add(path+".code", "%d must be a positive response code", e.Code)
		}
	} else if known {
		if e.Rate != 0 {
			p.add(path+".rate", "only a busy event has a rate, not %s", e.State)
		}
		if e.Code != 0 {
			p.add(path+".code", "only a busy event has a code, not %s", e.State)
		}
	}
	switch {
	case e.State == StateFlapping:
		switch {
		case e.Period <= 0:
			p.add(path+".period", "%s must be positive (one down-then-up cycle)", e.Period)
		case e.Period > e.For && e.For > 0:
			p.add(path+".period", "%s is longer than the event (%s): it would never come back up", e.Period, e.For)
		}
	case e.State == StateStall:
		if e.Period <= 0 {
			p.add(path+".period", "%s must be positive (a stall every period)", e.Period)
		}
		switch {
		case e.Length <= 0:
			p.add(path+".length", "%s must be positive (how long each stall lasts)", e.Length)
		case e.Period > 0 && e.Length > e.Period:
			p.add(path+".length", "%s is longer than the period (%s)", e.Length, e.Period)
		}
	case e.Period != 0 && known:
		p.add(path+".period", "only a flapping or stall event has a period, not %s", e.State)
	}
	if e.State != StateStall && e.Length != 0 && known {
		p.add(path+".length", "only a stall event has a length, not %s", e.State)
	}
	switch e.Probe {
	case ProbeAuto, ProbeReachable, ProbeUnreachable, ProbeTimeout:
		if e.Probe != ProbeAuto && e.State == StateGone {
			p.add(path+".probe", "a gone event changes only the route, not what probes answer: leave the field out")
		}
	default:
		p.add(path+".probe", "%q is not one of %s", e.Probe, probeList())
	}
}

func stateList() string {
	names := make([]string, len(eventStates))
	for i, s := range eventStates {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func probeList() string {
	names := make([]string, len(probeAnswers))
	for i, s := range probeAnswers {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// sendTimeout is the budget of every send.
func (s *Scenario) sendTimeout() time.Duration {
	if s.SendTimeout > 0 {
		return s.SendTimeout
	}
	return 3 * time.Second
}

// seconds is the number of seconds a run records: sends may run a send
// timeout past the end, and one more second holds the attempt that ends
// exactly there.
func (s *Scenario) seconds() int {
	return int((s.Duration+s.sendTimeout())/time.Second) + 1
}

// has reports whether an event of the scenario puts a broker in state st.
func (s *Scenario) has(st State) bool {
	return slices.ContainsFunc(s.Events, func(e Event) bool { return e.State == st })
}

// routePoll is how often each producer polls the route.
func (s *Scenario) routePoll() time.Duration {
	if s.RoutePoll > 0 {
		return s.RoutePoll
	}
	return 30 * time.Second
}

// routeChanges reports whether the route changes during a run: a broker
// joins late or an event takes one out of it.
func (s *Scenario) routeChanges() bool {
	return s.has(StateGone) || slices.ContainsFunc(s.Brokers, func(b Broker) bool { return b.Joins > 0 })
}

// producers is the number of producers of a run: Producers, at least 1.
func (s *Scenario) producers() int { return max(s.Producers, 1) }

// open reports whether the scenario's load is open.
func (s *Scenario) open() bool { return s.Load == LoadOpen }

// Queues returns the total number of queues of the scenario's brokers.
func (s *Scenario) Queues() int {
	n := 0
	for _, b := range s.Brokers {
		n += b.Queues
	}
	return n
}
