package sim

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// Ablation is one policy of the mqfault preset past the reference, and how
// to switch it off: the ablation's strategy is the preset with that one
// policy off, so its row beside mqfault's shows what the policy does.
type Ablation struct {
	// Name is the short name; the strategy is named "mqfault-" + Name
	// ("mqfault-retry-budget").
	Name string
	// Policy names the policy in words ("retry budget"); the strategy's
	// label is "mqfault − " + Policy.
	Policy string
	// Fields names the settings Off changes ("producer.Config.RetryBudget"),
	// and nothing else.
	Fields []string
	// Requires names the ablations whose policies this one takes effect
	// with: the detector for the probe rules, the cap for its hold.
	Requires []string

	// set reports whether the policy's own setting is on in l and p (its
	// Requires aside); it mirrors the test that turns the policy on in
	// package latency or producer.
	set func(l latency.Config, p producer.Config) bool
	// off switches the policy off, changing exactly Fields.
	off func(l *latency.Config, p *producer.Config)
	// latency is true for a latency policy, which extends mode v5 with
	// fault tolerance on only.
	latency bool
}

// StrategyName returns the name of the ablation's strategy.
func (a Ablation) StrategyName() string { return PresetName + "-" + a.Name }

// Label returns how reports name the ablation: "mqfault − retry budget".
func (a Ablation) Label() string { return PresetName + " − " + a.Policy }

// PresetName is the name of the mqfault preset's strategy, which the
// ablations change.
const PresetName = "mqfault"

// ablations lists every policy past the reference that an ablation can
// switch off, in report order: latency's registry of policies
// (latency.Policies, in its order, each switched off by its own off
// switch), with the detector's ablations before the first policy that
// requires the detector, then the fast probes and the producer's policies.
var ablations = buildAblations()

// detectorAblations switch off the detector's settings of the preset.
var detectorAblations = []Ablation{
	{Name: "detector", Policy: "detector", Fields: []string{"latency.Config.Detector"}, latency: true,
		set: func(l latency.Config, _ producer.Config) bool { return l.Detector },
		off: func(l *latency.Config, _ *producer.Config) { l.Detector = false }},
	{Name: "parallel-probes", Policy: "parallel probes", Fields: []string{"latency.Config.DetectParallel"}, Requires: []string{"detector"}, latency: true,
		set: func(l latency.Config, _ producer.Config) bool { return l.DetectParallel > 1 },
		off: func(l *latency.Config, _ *producer.Config) { l.DetectParallel = 1 }},
}

// laterAblations follow the registry's: the fast probes, then the
// producer's policies.
var laterAblations = []Ablation{
	{Name: "fast-probes", Policy: "fast probes", Fields: []string{"latency.Config.DetectInterval", "latency.Config.DetectPeriod"}, Requires: []string{"detector"}, latency: true,
		set: func(l latency.Config, _ producer.Config) bool {
			r := latency.Reference5()
			return l.DetectInterval < r.DetectInterval || l.DetectPeriod < r.DetectPeriod
		},
		off: func(l *latency.Config, _ *producer.Config) {
			r := latency.Reference5()
			l.DetectInterval, l.DetectPeriod = r.DetectInterval, r.DetectPeriod
		}},
	{Name: "per-attempt-cap", Policy: "per-attempt cap", Fields: []string{"producer.Config.MaxTimeoutPerRequest"},
		set: func(_ latency.Config, p producer.Config) bool { return p.MaxTimeoutPerRequest > 0 },
		off: func(_ *latency.Config, p *producer.Config) { p.MaxTimeoutPerRequest = 0 }},
	{Name: "retry-budget", Policy: "retry budget", Fields: []string{"producer.Config.RetryBudget"},
		set: func(_ latency.Config, p producer.Config) bool { return p.RetryBudget > 0 },
		off: func(_ *latency.Config, p *producer.Config) { p.RetryBudget = 0 }},
	{Name: "room-wait", Policy: "room wait", Fields: []string{"producer.Config.RoomWait"},
		set: func(_ latency.Config, p producer.Config) bool { return p.RoomWait > 0 },
		off: func(_ *latency.Config, p *producer.Config) { p.RoomWait = 0 }},
}

func buildAblations() []Ablation {
	var out []Ablation
	detector := false
	for _, pol := range latency.Policies() {
		if !detector && slices.Contains(pol.Requires, "detector") {
			out, detector = append(out, detectorAblations...), true
		}
		var fields []string
		for _, f := range pol.OffFields() {
			fields = append(fields, "latency.Config."+f)
		}
		out = append(out, Ablation{Name: pol.Ablation, Policy: pol.Name, Fields: fields, Requires: pol.Requires, latency: true,
			set: func(l latency.Config, _ producer.Config) bool { return pol.On(l) },
			off: func(l *latency.Config, _ *producer.Config) { pol.Off(l) }})
	}
	if !detector {
		out = append(out, detectorAblations...)
	}
	return append(out, laterAblations...)
}

// Ablations returns every ablation the simulator knows, in report order,
// whether or not the preset has its policy on (AblationStrategies returns
// the applicable ones). Each call returns a new slice.
func Ablations() []Ablation { return slices.Clone(ablations) }

// preset returns the mqfault strategy of Strategies.
func preset() Strategy {
	all := Strategies()
	i := slices.IndexFunc(all, func(s Strategy) bool { return s.Name == PresetName })
	return all[i]
}

// Applies returns nil when the policy is in effect in base's settings (its
// own setting on, and every policy it requires in effect), so switching it
// off can change a run; otherwise an error saying what base has off.
func (a Ablation) Applies(base Strategy) error {
	return a.applies(base, map[string]bool{})
}

func (a Ablation) applies(base Strategy, seen map[string]bool) error {
	l, p := base.Latency, base.Producer
	name := base.Name + "-" + a.Name
	if a.latency && (l.Mode == latency.ModeV4 || !l.FaultTolerance) {
		return &PolicyOffError{Strategy: name, Reason: fmt.Sprintf("%s does not run latency fault tolerance in mode v5, which the policy %q extends", base.Name, a.Policy)}
	}
	if !a.set(l, p) {
		return &PolicyOffError{Strategy: name, Reason: fmt.Sprintf("%s has the policy %q off (%s), so there is nothing to switch off", base.Name, a.Policy, strings.Join(a.Fields, ", "))}
	}
	seen[a.Name] = true
	for _, r := range a.Requires {
		req, ok := findAblation(r)
		if !ok || seen[r] {
			continue
		}
		if req.applies(base, seen) != nil {
			return &PolicyOffError{Strategy: name, Reason: fmt.Sprintf("the policy %q takes effect only with %q on, and %s has that off", a.Policy, req.Policy, base.Name)}
		}
	}
	return nil
}

// PolicyOffError says that an ablation does not apply: its policy is not in
// effect in the strategy it would change, so its row would only repeat that
// strategy's.
type PolicyOffError struct {
	// Strategy is the ablation's strategy name ("mqfault-load-aware").
	Strategy string
	// Reason says what is off.
	Reason string
}

func (e *PolicyOffError) Error() string {
	return fmt.Sprintf("sim: ablation %q does not apply: %s", e.Strategy, e.Reason)
}

// Of returns base with the policy switched off, named
// a.StrategyName() and marked as an ablation of base, or the error of
// Applies.
func (a Ablation) Of(base Strategy) (Strategy, error) {
	if err := a.Applies(base); err != nil {
		return Strategy{}, err
	}
	s := base
	s.Latency.Filters = slices.Clone(base.Latency.Filters)
	s.Producer.RetryCodes = slices.Clone(base.Producer.RetryCodes)
	a.off(&s.Latency, &s.Producer)
	s.Name = base.Name + "-" + a.Name
	s.Summary = fmt.Sprintf("%s − %s: %s with the %s switched off (%s)", base.Name, a.Policy, base.Name, a.Policy, strings.Join(a.Fields, ", "))
	s.Ablated = Ablated{Of: base.Name, Policy: a.Policy}
	return s, nil
}

func findAblation(name string) (Ablation, bool) {
	i := slices.IndexFunc(ablations, func(a Ablation) bool { return a.Name == name })
	if i < 0 {
		return Ablation{}, false
	}
	return ablations[i], true
}

// Ablated marks a strategy as an ablation: the strategy named Of with the
// policy Policy switched off. Its zero value marks none.
type Ablated struct {
	Of, Policy string
}

// AblationStrategies returns a strategy for every ablation that applies to
// the mqfault preset as it is now (Ablation.Applies), in report order: the
// rows `mqfault sim --ablation` appends after mqfault's.
func AblationStrategies() []Strategy {
	base := preset()
	var out []Strategy
	for _, a := range ablations {
		if s, err := a.Of(base); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// AblationNames returns the names of AblationStrategies' strategies.
func AblationNames() []string {
	var names []string
	for _, s := range AblationStrategies() {
		names = append(names, s.Name)
	}
	return names
}

// ablationStrategy returns the strategy of the ablation called name
// ("mqfault-retry-budget"): ok is false when no ablation has that name, and
// err says why one that has it does not apply to the preset.
func ablationStrategy(name string) (s Strategy, ok bool, err error) {
	short, found := strings.CutPrefix(name, PresetName+"-")
	if !found {
		return Strategy{}, false, nil
	}
	a, found := findAblation(short)
	if !found {
		return Strategy{}, false, nil
	}
	s, err = a.Of(preset())
	return s, true, err
}

// Sameness says how an ablation's result compares with its base's.
type Sameness int

const (
	// Differs: some number of the table or the JSON differs (or the result
	// is no ablation, or its base is not in the report).
	Differs Sameness = iota
	// SameNumbers: every number of the table and of the JSON is the base's
	// (totals, latency percentiles, per-broker counts), but the run over
	// time is not (its per-second series or isolation timeline differ).
	SameNumbers
	// SameRun: the run was the base's in every number the report carries,
	// its series and timeline included; only names and wall time differ.
	SameRun
)

// SameAsBase compares result i, an ablation, with its base strategy
// (Ablated.Of) when the report has it: base is the base's index (-1 when
// none). Where the policy changed nothing the report folds the row: the
// table and the page's table from SameNumbers on (naming it in a note),
// the page's charts at SameRun.
func (r *Report) SameAsBase(i int) (base int, same Sameness) {
	res := &r.Results[i]
	if res.Ablated.Of == "" {
		return -1, Differs
	}
	base = slices.IndexFunc(r.Results, func(b Result) bool { return b.Name == res.Ablated.Of })
	if base < 0 {
		return -1, Differs
	}
	b := &r.Results[base]
	switch {
	case !sameNumbers(res, b):
		return base, Differs
	case !reflect.DeepEqual(res.Series, b.Series) || !reflect.DeepEqual(res.Timeline, b.Timeline) || !reflect.DeepEqual(res.Fleet, b.Fleet):
		return base, SameNumbers
	}
	return base, SameRun
}

// sameFleetPeak reports whether two fleets' figures in the table (the
// herding peak) are the same, or both runs are not fleets.
func sameFleetPeak(a, b *FleetResult) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Producers == b.Producers && a.Peak == b.Peak && a.PeakAt == b.PeakAt && a.PeakBroker == b.PeakBroker
}

// hasBase reports whether result i is an ablation whose base is in the
// report.
func (r *Report) hasBase(i int) bool {
	of := r.Results[i].Ablated.Of
	return of != "" && slices.ContainsFunc(r.Results, func(b Result) bool { return b.Name == of })
}

// sameNumbers reports whether a and b have the same numbers in the table and
// the JSON.
func sameNumbers(a, b *Result) bool {
	return a.Sends == b.Sends && a.Succeeded == b.Succeeded && a.Failed == b.Failed && a.Attempts == b.Attempts &&
		a.FirstAttemptFailures == b.FirstAttemptFailures && a.UnhealthyAttempts == b.UnhealthyAttempts &&
		a.Retries == b.Retries && a.RetriesRefused == b.RetriesRefused && a.Waited == b.Waited && a.BusyAnswers == b.BusyAnswers &&
		a.Shed == b.Shed && a.InFlightAtEnd == b.InFlightAtEnd && a.Latency == b.Latency && slices.Equal(a.Brokers, b.Brokers) &&
		sameFleetPeak(a.Fleet, b.Fleet)
}

// ablationBases returns the names of the strategies the report's ablations
// change, each once, in order of their first ablation.
func ablationBases(r *Report) []string {
	var out []string
	for _, res := range r.Results {
		if of := res.Ablated.Of; of != "" && !slices.Contains(out, of) {
			out = append(out, of)
		}
	}
	return out
}

// InsertAblations returns strats with AblationStrategies inserted right
// after the mqfault preset's row, leaving out those strats already holds
// (by name). It returns an error when strats has no mqfault row, as the
// ablations' rows would then have nothing to be compared with.
func InsertAblations(strats []Strategy) ([]Strategy, error) {
	i := slices.IndexFunc(strats, func(s Strategy) bool { return s.Name == PresetName })
	if i < 0 {
		return nil, fmt.Errorf("sim: the ablations change the %s strategy, which is not among the strategies to run", PresetName)
	}
	var add []Strategy
	for _, a := range AblationStrategies() {
		if !slices.ContainsFunc(strats, func(s Strategy) bool { return s.Name == a.Name }) {
			add = append(add, a)
		}
	}
	return slices.Insert(slices.Clone(strats), i+1, add...), nil
}
