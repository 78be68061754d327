package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const familyDir = "../../testdata/families"

// testFamily is a small family, so tests that run it are fast: 2 to 4
// brokers at 100 sends/s each, 4 to 6 s, one or two faults of every
// state.
const testFamily = `name: tiny
duration: {min: 4s, max: 6s}
brokers: {min: 2, max: 4}
queues: 2
latency: {median: {min: 1ms, max: 3ms}, tail: 5}
capacity: {per_broker: 100, uneven: 0.5, spread: 3}
flow_control: {none: 1, reject: 1, queue: 1}
load: {model: {closed: 1, open: 1}, senders: [2, 4], utilization: {min: 0.3, max: 1.1}}
faults:
  count: {min: 1, max: 2}
  at: {min: 0.1, max: 0.5}
  for: {min: 1s, max: 3s}
  probe: {auto: 3, reachable: 1}
  states:
    down:
    blackhole: {}
    slow: {median: 400ms}
    busy: {rate: 0.5}
    flapping: {period: 1s, weight: 2}
    stall: {period: 1s, length: 200ms}
    gone: {}
`

func mustFamily(t testing.TB, text string) *Family {
	t.Helper()
	f, err := ParseFamily([]byte(text))
	if err != nil {
		t.Fatalf("ParseFamily() error = %v", err)
	}
	return f
}

// TestRule checks the one verdict rule at its bounds: 5% and 5 sends more
// failed, or 5% more p99, is worse; 20% fewer failed sends (of a baseline
// that failed some) or 20% lower p99 is better; worse wins over better.
func TestRule(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	base := Score{Failed: 100, P99: ms(100)}
	for _, tt := range []struct {
		got  Score
		want Verdict
	}{
		{Score{100, ms(100)}, Neutral},
		{Score{110, ms(100)}, Neutral}, // 1.05 x 100 + 5 = 110: not above
		{Score{111, ms(100)}, Worse},   // above it
		{Score{100, ms(105)}, Neutral}, // 5% more p99: not above
		{Score{100, ms(105.1)}, Worse}, // above
		{Score{80, ms(100)}, Neutral},  // 20% fewer: not below
		{Score{79, ms(100)}, Better},   // below
		{Score{100, ms(79.9)}, Better}, // p99 below 80%
		{Score{200, ms(10)}, Worse},    // worse on one column, better on the other
		{Score{0, ms(106)}, Worse},     // no failed sends, but slower
		{Score{0, ms(100)}, Better},    // none failed of 100
	} {
		if got := DefaultRule.Judge(tt.got, base).Verdict(); got != tt.want {
			t.Errorf("Judge(%+v, %+v) = %v, want %v", tt.got, base, got, tt.want)
		}
	}
	// A baseline that failed nothing: 5 failed sends are within the slack,
	// none is not better.
	zero := Score{Failed: 0, P99: ms(10)}
	for got, want := range map[Score]Verdict{{5, ms(10)}: Neutral, {6, ms(10)}: Worse, {0, ms(10)}: Neutral} {
		if v := DefaultRule.Judge(got, zero).Verdict(); v != want {
			t.Errorf("Judge(%+v, %+v) = %v, want %v", got, zero, v, want)
		}
	}
}

// TestParseFamilyProblems: every problem of a family file is reported at
// once, with its line, in the order of the lines.
func TestParseFamilyProblems(t *testing.T) {
	text := `name: bad name
duration: {min: 30s, max: 10s}
brokers: {min: 0, max: 300}
queues: four
latency: {median: 3ms}
capacity: {per_broker: 100, uneven: 1.5}
flow_control: {none: 1, leaky: 1}
load: {model: closed, utilization: 0.5, colour: red}
faults:
  count: 2
  at: 1.2
  for: 10s
  states:
    slow: {tail: 0.5}
    busy: {rate: 2, period: 1s}
    sleepy: {}
`
	_, err := ParseFamily([]byte(text))
	if !errors.Is(err, ErrInvalidFamily) {
		t.Fatalf("ParseFamily() error = %v, want ErrInvalidFamily", err)
	}
	var fe *FamilyError
	if !errors.As(err, &fe) {
		t.Fatalf("error %T is not a *FamilyError", err)
	}
	want := []string{
		`line 1: name: "bad name" may hold only letters, digits and . _ : -`,
		`line 2: duration.max: 10s is below min 30s`,
		`line 3: brokers.min: 0 is not in [1, 256]`,
		`line 3: brokers.max: 300 is not in [1, 256]`,
		`line 4: queues: "four" is not an integer`,
		`line 5: latency.tail: missing`,
		`line 6: capacity.uneven: 1.5 must be in [0, 1]`,
		`line 6: capacity.spread: missing`,
		`line 7: flow_control: "leaky" is not one of none, reject, queue`,
		`line 8: load.colour: unknown field`,
		`line 8: load.senders: missing`,
		`line 11: faults.at: 1.2 must be in [0, 1)`,
		`line 14: faults.states.slow.tail: 0.5 is below 1`,
		`line 14: faults.states.slow.median: missing`,
		`line 15: faults.states.busy.period: unknown field (want one of weight, probe, rate, code)`,
		`line 15: faults.states.busy.rate: 2 must be in (0, 1]`,
		`line 16: faults.states.sleepy: "sleepy" is not one of down, blackhole, slow, busy, flapping`,
	}
	lines := strings.Split(err.Error(), "\n")
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w) }) {
			t.Errorf("no problem %q in:\n%s", w, err)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(lines), len(want), err)
	}
	// Unknown fields first (what follows from a misspelt field comes after
	// it), then in the order of the lines.
	sorted := slices.IsSortedFunc(lines, func(a, b string) int {
		ua, ub := strings.Contains(a, ": unknown field"), strings.Contains(b, ": unknown field")
		if ua != ub {
			if ua {
				return -1
			}
			return 1
		}
		var x, y int
		_, _ = fmt.Sscanf(a, "line %d", &x)
		_, _ = fmt.Sscanf(b, "line %d", &y)
		return x - y
	})
	if !sorted {
		t.Errorf("problems not unknown fields first, then in the order of the lines:\n%s", err)
	}
	for _, bad := range []string{"", "name: x\n", "[1, 2]",
		strings.Replace(testFamily, "count: {min: 1, max: 2}", "count: 0", 1),
		strings.Replace(testFamily, "uneven: 0.5, ", "", 1),
		strings.Replace(testFamily, "{closed: 1, open: 1}", "open", 1), "name: x\nduration: 10s\nbrokers: 2\nqueues: 2\nlatency: {median: 1ms, tail: 2}\ncapacity: {per_broker: 1000000}\nload: {model: open, utilization: 1}\n"} {
		if _, err := ParseFamily([]byte(bad)); !errors.Is(err, ErrInvalidFamily) {
			t.Errorf("ParseFamily(%q) error = %v, want ErrInvalidFamily", bad, err)
		}
	}
}

// TestFamilyKnowsEveryState: the family generator has an entry for every
// state an event may have, so a family can draw each (a new state needs
// one in faultKinds).
func TestFamilyKnowsEveryState(t *testing.T) {
	for _, st := range eventStates {
		if _, ok := faultKinds[st]; !ok {
			t.Errorf("faultKinds has no entry for the state %s", st)
		}
	}
	if len(faultKinds) != len(eventStates) {
		t.Errorf("faultKinds has %d states, events %d", len(faultKinds), len(eventStates))
	}
}

// TestFamilyDraw: run i's scenario depends only on the family, the family
// seed and i; another seed or run draws another; every drawn scenario is
// valid and within the family's ranges.
func TestFamilyDraw(t *testing.T) {
	f := mustFamily(t, testFamily)
	a, err := f.Draw(7, 3)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		b, _ := f.Draw(7, 3)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("two draws of run 3 at seed 7 differ:\n%+v\n%+v", a.Scenario, b.Scenario)
		}
	}
	if b, _ := f.Draw(8, 3); reflect.DeepEqual(a.Scenario, b.Scenario) {
		t.Error("seed 8 drew seed 7's run 3")
	}
	if b, _ := f.Draw(7, 4); reflect.DeepEqual(a.Scenario, b.Scenario) {
		t.Error("run 4 is run 3")
	}
	flows, states := map[string]bool{}, map[State]bool{}
	for i := 1; i <= 200; i++ {
		d, err := f.Draw(1, i)
		if err != nil {
			t.Fatal(err)
		}
		sc := d.Scenario
		flows[d.Flow] = true
		if n := len(sc.Brokers); n < 2 || n > 4 || sc.Duration < 4*time.Second || sc.Duration > 6*time.Second ||
			len(sc.Events) < 1 || len(sc.Events) > 2 || d.Utilization < 0.25 || d.Utilization > 1.2 {
			t.Errorf("run %d drew %s (utilization %v), outside the family", i, d, d.Utilization)
		}
		for _, e := range sc.Events {
			states[e.State] = true
			if e.At < sc.Duration/10-time.Second/10 || e.End() > sc.Duration {
				t.Errorf("run %d: event %+v outside [10%%, end]", i, e)
			}
		}
		if sc.Name != "tiny-"+strconv.Itoa(i) {
			t.Errorf("run %d is named %q", i, sc.Name)
		}
	}
	if len(flows) != 3 || len(states) != len(eventStates) {
		t.Errorf("200 runs drew flow models %v and states %v, want all", flows, states)
	}
}

// TestShippedFamilies: broad draws 2 to 64 brokers, all three flow-control
// models, loads of 10% to 115% and every fault state; healthy draws no
// fault at 10% to 95%.
func TestShippedFamilies(t *testing.T) {
	broad, err := LoadFamily(filepath.Join(familyDir, "broad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := broad.Brokers.bounds(); lo != 2 || hi != 64 {
		t.Errorf("broad: brokers %v..%v, want 2..64", lo, hi)
	}
	if lo, hi := broad.Load.Utilization.bounds(); lo != 0.1 || hi != 1.15 {
		t.Errorf("broad: utilization %v..%v, want 0.1..1.15", lo, hi)
	}
	for _, m := range flowModels {
		if broad.FlowControl.weight(m) <= 0 {
			t.Errorf("broad: flow control %s has no weight", m)
		}
	}
	for _, st := range eventStates {
		if i := slices.IndexFunc(broad.Faults.States, func(s FamilyState) bool { return s.State == st }); i < 0 || broad.Faults.States[i].Weight <= 0 {
			t.Errorf("broad: no fault in the state %s", st)
		}
	}
	healthy, err := LoadFamily(filepath.Join(familyDir, "healthy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := healthy.Load.Utilization.bounds(); lo != 0.1 || hi != 0.95 {
		t.Errorf("healthy: utilization %v..%v, want 0.1..0.95", lo, hi)
	}
	for i := 1; i <= 100; i++ {
		d, err := healthy.Draw(1, i)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Scenario.Events) != 0 {
			t.Errorf("healthy run %d has faults: %s", i, d)
		}
		if _, err := broad.Draw(1, i); err != nil {
			t.Fatal(err)
		}
	}
}

// TestScenarioYAMLFields: Scenario.YAML writes exactly the fields the
// decoder reads, each to the struct field it decodes into, and every field
// of the structs.
func TestScenarioYAMLFields(t *testing.T) {
	for _, tt := range []struct {
		typ     reflect.Type
		decoder []string
	}{
		{reflect.TypeFor[Scenario](), scenarioFields},
		{reflect.TypeFor[Broker](), brokerFields},
		{reflect.TypeFor[Latency](), latencyFields},
		{reflect.TypeFor[Event](), eventFields},
	} {
		var keys, fields []string
		for _, f := range yamlFieldsOf(tt.typ) {
			keys = append(keys, f.key)
			fields = append(fields, f.field)
			if _, ok := tt.typ.FieldByName(f.field); !ok {
				t.Errorf("%s has no field %s", tt.typ.Name(), f.field)
			}
		}
		if !slices.Equal(keys, tt.decoder) {
			t.Errorf("%s: YAML writes %v, the decoder reads %v", tt.typ.Name(), keys, tt.decoder)
		}
		for i := range tt.typ.NumField() {
			if name := tt.typ.Field(i).Name; !slices.Contains(fields, name) {
				t.Errorf("Scenario.YAML does not write %s.%s", tt.typ.Name(), name)
			}
		}
	}
}

// TestScenarioYAMLRoundTrip: a scenario written by Scenario.YAML parses
// back into an equal one: the default, the golden and shipped scenarios,
// and drawn ones with fractional rates and capacities.
func TestScenarioYAMLRoundTrip(t *testing.T) {
	scenarios := []*Scenario{DefaultScenario()}
	files, _ := filepath.Glob(filepath.Join(scenarioDir, "*.yaml"))
	golden, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.yaml"))
	for _, path := range append(files, golden...) {
		sc, err := LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		scenarios = append(scenarios, sc)
	}
	f := mustFamily(t, testFamily)
	for i := 1; i <= 30; i++ {
		d, err := f.Draw(3, i)
		if err != nil {
			t.Fatal(err)
		}
		d.Scenario.Rate += 1.0 / 3
		d.Scenario.Brokers[0].Capacity += 0.1
		scenarios = append(scenarios, d.Scenario)
	}
	odd := DefaultScenario()
	odd.Name, odd.Seed = "true", 1<<63+5
	scenarios = append(scenarios, odd)
	for _, sc := range scenarios {
		text := sc.YAML("a header\nof two lines")
		back, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(YAML of %s) error = %v\n%s", sc.Name, err, text)
		}
		if !reflect.DeepEqual(back, sc) {
			t.Errorf("%s: the YAML reads back into another scenario:\n%s\n%+v\n%+v", sc.Name, text, back, sc)
		}
	}
}

func numbersOnly(rs []Result) []Result {
	out := slices.Clone(rs)
	for i := range out {
		out[i].Series, out[i].Timeline, out[i].Wall = Series{}, nil, 0
	}
	return out
}

// TestRunFamily: the report is the same for any number of workers; the
// totals count every run once per strategy; Keep writes the worse runs as
// scenario files, and running one gives exactly that run's numbers.
func TestRunFamily(t *testing.T) {
	f := mustFamily(t, testFamily)
	strats, err := SelectStrategies("off", "v5", "v5+detector")
	if err != nil {
		t.Fatal(err)
	}
	// The first family seed whose six runs have one where off is worse than
	// the baseline (most have), so that Keep has something to write.
	var one *FamilyReport
	var cfg FamilyConfig
	for seed := uint64(1); seed <= 20 && one == nil; seed++ {
		cfg = FamilyConfig{Family: f, Runs: 6, Seed: seed, Strategies: strats, Workers: 1}
		rep, err := RunFamily(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range rep.Runs {
			if len(rep.Worse(&run.Trials[0])) > 0 {
				one = rep
				break
			}
		}
	}
	if one == nil {
		t.Fatal("no family seed from 1 to 20 drew a run where off is worse than v5: the family draws no fault that matters")
	}
	cfg.Workers = 4
	var calls []int
	cfg.Progress = func(done, total int) {
		if total != 6 {
			t.Errorf("progress total %d, want 6", total)
		}
		calls = append(calls, done)
	}
	four, err := RunFamily(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []int{1, 2, 3, 4, 5, 6}) {
		t.Errorf("progress calls %v, want 1..6", calls)
	}
	var a, b, table bytes.Buffer
	if err := one.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := four.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("1 and 4 workers give different reports:\n%s\n%s", a.String(), b.String())
	}
	if err := one.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	for _, tally := range one.Totals() {
		if tally.Worse+tally.Better+tally.Neutral != 6 {
			t.Errorf("%+v does not count 6 runs", tally)
		}
	}
	// The baseline's strategies are never better than it, and the table
	// has a line per run.
	for _, run := range one.Runs {
		if v := run.Trials[0].Verdicts; v[1] == Better || v[2] == Better {
			t.Errorf("run %d: v5 or v5+detector better than their own best: %v", run.Run, v)
		}
		if !strings.Contains(table.String(), run.Drawn.String()) {
			t.Errorf("the table has no line for run %d", run.Run)
		}
	}

	dir := t.TempDir()
	kept, err := one.Keep(dir)
	if err != nil {
		t.Fatal(err)
	}
	worse := 0
	for _, run := range one.Runs {
		if len(one.Worse(&run.Trials[0])) > 0 {
			worse++
		}
	}
	if len(kept) != worse || worse == 0 {
		t.Fatalf("kept %d files, %d runs had a worse strategy; want them equal and not 0", len(kept), worse)
	}
	for _, path := range kept {
		sc, err := LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(one.Runs, func(r FamilyRun) bool { return r.Scenario.Name == sc.Name })
		if i < 0 {
			t.Fatalf("%s: no run named %s", path, sc.Name)
		}
		rep := mustRun(t, sc, WithStrategies(strats...))
		if got, want := numbersOnly(rep.Results), one.Runs[i].Trials[0].Results; !reflect.DeepEqual(got, numbersOnly(want)) {
			t.Errorf("%s replays to other numbers:\n%+v\nwant\n%+v", path, got, want)
		}
		text, _ := os.ReadFile(path)
		if !bytes.HasPrefix(text, []byte("# Run ")) {
			t.Errorf("%s does not say where it comes from:\n%s", path, text)
		}
	}
}

// TestRunFamilyErrors: a baseline the strategies lack, no runs, too many.
func TestRunFamilyErrors(t *testing.T) {
	f := mustFamily(t, testFamily)
	v4, _ := SelectStrategies("v4")
	for _, cfg := range []FamilyConfig{
		{Family: f, Runs: 1, Strategies: v4},
		{Family: f, Runs: 1, Baseline: Baseline{"v6"}},
		{Family: f, Runs: 0},
		{Family: f, Runs: MaxFamilyRuns + 1},
		{Runs: 1},
	} {
		if _, err := RunFamily(context.Background(), cfg); err == nil {
			t.Errorf("RunFamily(%+v) succeeded, want an error", cfg)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunFamily(ctx, FamilyConfig{Family: f, Runs: 3}); !errors.Is(err, context.Canceled) {
		t.Errorf("RunFamily(cancelled) error = %v, want context.Canceled", err)
	}
}

// TestFamilyCapacityFollowsRoundRobin: a family's brokers of equal
// capacity are equal for round robin, which sends each broker its share of
// the queues: every broker's capacity is its queues' share of the
// cluster's, so that at a utilization u every broker is offered u of its
// capacity. Uneven runs spread the capacity per queue by at most the
// spread drawn (Drawn.Spread, at least 1.5 in this family).
func TestFamilyCapacityFollowsRoundRobin(t *testing.T) {
	f := mustFamily(t, strings.Replace(strings.Replace(testFamily, "queues: 2", "queues: [2, 4, 8]", 1),
		"brokers: {min: 2, max: 4}", "brokers: {min: 2, max: 12}", 1))
	equal, uneven := 0, 0
	for i := 1; i <= 200; i++ {
		d, err := f.Draw(1, i)
		if err != nil {
			t.Fatal(err)
		}
		sc := d.Scenario
		if d.Flow == FlowNone {
			continue
		}
		queues := 0
		for _, b := range sc.Brokers {
			queues += b.Queues
		}
		lo, hi := math.Inf(1), 0.0
		for _, b := range sc.Brokers {
			// The broker's offered load under round robin over its capacity.
			u := sc.Rate * float64(b.Queues) / float64(queues) / b.Capacity
			lo, hi = min(lo, u), max(hi, u)
		}
		// Capacities are whole sends a second: allow their rounding.
		slack := 1 + 1/(100*0.25/8)
		if d.Spread == 1 {
			equal++
			if hi > d.Utilization*slack || lo < d.Utilization/slack {
				t.Errorf("run %d (%s): brokers offered %.3f to %.3f of their capacity under round robin, want %.3f each", i, d, lo, hi, d.Utilization)
			}
			continue
		}
		uneven++
		if hi/lo > d.Spread*slack*slack || d.Spread > 3*slack {
			t.Errorf("run %d (%s): round robin offers brokers %.3f to %.3f of their capacity, a spread past the drawn %.2f", i, d, lo, hi, d.Spread)
		}
	}
	if equal < 20 || uneven < 20 {
		t.Errorf("200 runs drew %d equal and %d uneven clusters with a capacity, want both", equal, uneven)
	}
}
