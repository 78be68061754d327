package latency

import (
	"slices"
	"time"
)

// Mode selects whose decisions the strategy reproduces: one registered
// spec (mode5.go, mode4.go) holds everything a mode decides.
type Mode string

// Valid reports whether m is a registered mode ("" is ModeV5).
func (m Mode) Valid() bool { return modeSpecs[m.orDefault()] != nil }

func (m Mode) orDefault() Mode {
	if m == "" {
		return modes[0].mode
	}
	return m
}

// modeSpec is everything a mode decides. Each mode's spec is a value of its
// own file, registered once in modes; nothing else asks which mode it is.
// TestModeSpecsComplete fails on a spec missing a part.
type modeSpec struct {
	mode  Mode
	about string // whose decisions, for docs and messages
	// cascade builds the mode's selection cascade (cascade5.go, cascade4.go).
	cascade func(*Strategy) cascade
	// durations is the mode's own duration table.
	durations func() DurationTable
	// isolationLatency is the latency a failed send is charged in the
	// duration table.
	isolationLatency time.Duration
	// update is what a fault-table update does to a broker's isolation
	// (table.go).
	update updateRule
	// rules are the outcome rules: the fault update each class calls for on
	// each path (outcome.go).
	rules *ruleTable
	// detector: the mode has a detector (Config.Detector may be on).
	detector bool
	// reachability: the mode's fault table records whether a broker is
	// reachable (its updates' Reachable flag counts).
	reachability bool
	// leastBad: with fault tolerance on, the cascade ends in the least-bad
	// broker (the reference's pickOneAtLeast).
	leastBad bool
	// policies: the policies past the reference extend the mode.
	policies bool
	// send are the send loop's rules (pkg/producer).
	send SendRules
}

// modes are the registered modes, the default first: a new mode is its
// spec's file (and its cascade's, unless it shares one) and a line here.
var modes = []*modeSpec{&spec5, &spec4}

// modeSpecs finds a registered mode's spec.
var modeSpecs = func() map[Mode]*modeSpec {
	m := make(map[Mode]*modeSpec, len(modes))
	for _, s := range modes {
		m[s.mode] = s
	}
	return m
}()

// specOf returns mode's spec; an unknown mode has the default's.
func specOf(mode Mode) *modeSpec {
	if s := modeSpecs[mode.orDefault()]; s != nil {
		return s
	}
	return modes[0]
}

// Modes lists the registered modes, the default (ModeV5) first.
func Modes() []Mode {
	out := make([]Mode, len(modes))
	for i, s := range modes {
		out[i] = s.mode
	}
	return out
}

// ModeChoices lists the modes as a message offers them: `"v5" or "v4"`.
func ModeChoices() string {
	var b []byte
	for i, s := range modes {
		switch {
		case i == 0:
		case i == len(modes)-1:
			b = append(b, " or "...)
		default:
			b = append(b, ", "...)
		}
		b = append(b, '"')
		b = append(b, s.mode...)
		b = append(b, '"')
	}
	return string(b)
}

// ModeInfo is what a mode has, for the send loop, trace runner and knobs.
type ModeInfo struct {
	Mode  Mode
	About string // whose decisions the mode reproduces, such as "RocketMQ 5.3.3"
	// Detector: the mode has a detector (Config.Detector may be on).
	Detector bool
	// Reachability: the mode's table keeps FaultUpdate.Reachable.
	Reachability bool
	// LeastBad: with fault tolerance on, the cascade ends in StageLeastBad (pickOneAtLeast).
	LeastBad bool
	// IsolationLatency is what a failure is charged in the duration table (v5 10 s, v4 30 s).
	IsolationLatency time.Duration
	// Send are the send loop's rules.
	Send SendRules
}

// Info returns a copy of what m has ("" is ModeV5), or false for an
// unregistered mode. Safe for concurrent use.
func (m Mode) Info() (ModeInfo, bool) {
	s := modeSpecs[m.orDefault()]
	if s == nil {
		return ModeInfo{}, false
	}
	send := s.send
	send.RetryCodes = slices.Clone(send.RetryCodes)
	return ModeInfo{
		Mode: s.mode, About: s.about, Detector: s.detector, Reachability: s.reachability,
		LeastBad: s.leastBad, IsolationLatency: s.isolationLatency, Send: send,
	}, true
}

// SendRules are the send-loop rules a mode fixes beyond the fault updates,
// where the reference versions' send loops differ; pkg/producer reads them once per Policy.
type SendRules struct {
	// RetryCodes are the codes a sync send retries unless the producer has its own.
	RetryCodes []int
	// ResetIndex: a sync retry's pick resets the index (PickInfo.ResetIndex, 5.x).
	ResetIndex bool
	// AsyncRetryBudget: an async retry checks the time budget first (5.x's onExceptionImpl).
	AsyncRetryBudget bool
	// Classes is the rule after each class, by Class; a zero row is a missing one.
	Classes [numClasses]SendRule
}

// SendRule is what the send loop does after an attempt met one class.
type SendRule struct {
	// Sync: a sync or oneway attempt, or an async one failed before its hand-over.
	Sync Next
	// Async: an async attempt after its hand-over (PathAsyncAnswer).
	Async Next
}

// Next is what the send loop does after an attempt.
type Next uint8

const (
	// NextNone is a missing rule.
	NextNone Next = iota
	// NextAnswer keeps the answer and ends the send (a sync send retries a
	// status other than SendOK with RetryAnotherBrokerWhenNotStoreOK).
	NextAnswer
	// NextRetry starts the next attempt, if one is left.
	NextRetry
	// NextRetryCode retries on a retry code, else ends the send.
	NextRetryCode
	// NextEnd ends the send.
	NextEnd
	// NextUnsent (async only): the request never left the client, so the
	// attempt is a failure before dispatch whenever it is reported.
	NextUnsent
)

// The send rules both reference modes write.
var (
	sendAnswered  = SendRule{Sync: NextAnswer, Async: NextAnswer}
	sendBroker    = SendRule{Sync: NextRetryCode, Async: NextEnd}
	sendTransport = SendRule{Sync: NextRetry, Async: NextRetry}
	sendClient    = SendRule{Sync: NextRetry, Async: NextUnsent}
	sendCancelled = SendRule{Sync: NextEnd, Async: NextEnd}
)
