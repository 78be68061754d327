package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// allOn returns the mqfault preset with every policy of the ablation table
// on, whatever the preset turns on today, so each ablation has something to
// switch off.
func allOn(t *testing.T) Strategy {
	t.Helper()
	s := preset()
	l, p := &s.Latency, &s.Producer
	l.FaultTolerance, l.Detector = true, true
	l.DetectParallel = 16
	l.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 0.5}
	l.Backoff = &latency.BackoffConfig{Multiplier: 2, Max: time.Minute, Decay: 1000}
	l.DetectInterval, l.DetectPeriod = time.Second, time.Second
	l.ProbeFailures = true
	l.Capacity = &latency.CapacityConfig{Decrease: 0.75, Recovery: time.Second}
	l.Recovery = &latency.RecoveryConfig{After: 3 * time.Second}
	p.MaxTimeoutPerRequest = time.Second
	p.RetryBudget, p.RetryBudgetFloor = 0.5, 10
	p.RoomWait = 0.05
	if err := l.Validate(); err != nil {
		t.Fatalf("the all-on latency config is invalid: %v", err)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("the all-on producer config is invalid: %v", err)
	}
	return s
}

// changedFields returns the fields of the two strategies' latency and
// producer configs that differ, as "latency.Config.X" and
// "producer.Config.X".
func changedFields(a, b Strategy) []string {
	var out []string
	diff := func(prefix string, x, y reflect.Value) {
		for i := range x.NumField() {
			if !reflect.DeepEqual(x.Field(i).Interface(), y.Field(i).Interface()) {
				out = append(out, prefix+x.Type().Field(i).Name)
			}
		}
	}
	diff("latency.Config.", reflect.ValueOf(a.Latency), reflect.ValueOf(b.Latency))
	diff("producer.Config.", reflect.ValueOf(a.Producer), reflect.ValueOf(b.Producer))
	return out
}

// TestAblationTable: each ablation of the table, applied to a preset with
// every policy on, changes exactly its field (and says so in Fields), keeps
// both configs valid, is named mqfault-NAME and labelled "mqfault − POLICY",
// is marked as an ablation of mqfault, and leaves its policy off (the
// ablation of the result is refused).
func TestAblationTable(t *testing.T) {
	tests := []struct {
		name, policy string
		field        string
	}{
		{"isolation-cap", "isolation cap", "latency.Config.IsolationCap"},
		{"backoff", "backoff", "latency.Config.Backoff"},
		{"detector", "detector", "latency.Config.Detector"},
		{"parallel-probes", "parallel probes", "latency.Config.DetectParallel"},
		{"probe-failures", "probe failures", "latency.Config.ProbeFailures"},
		{"recovered-after", "recovered broker comes back", "latency.Config.Recovery"},
		{"capacity-model", "capacity model", "latency.Config.Capacity"},
		{"fast-probes", "fast probes", "latency.Config.DetectInterval,latency.Config.DetectPeriod"},
		{"per-attempt-cap", "per-attempt cap", "producer.Config.MaxTimeoutPerRequest"},
		{"retry-budget", "retry budget", "producer.Config.RetryBudget"},
		{"room-wait", "room wait", "producer.Config.RoomWait"},
	}
	var names []string
	for _, a := range Ablations() {
		names = append(names, a.Name)
	}
	var want []string
	for _, tt := range tests {
		want = append(want, tt.name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("Ablations() = %v, want %v (give a new ablation its case here)", names, want)
	}
	base := allOn(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Ablations()[i]
			if err := a.Applies(base); err != nil {
				t.Fatalf("Applies(every policy on) = %v, want nil", err)
			}
			s, err := a.Of(base)
			if err != nil {
				t.Fatalf("Of(every policy on) error = %v", err)
			}
			fields := strings.Split(tt.field, ",")
			if got := changedFields(base, s); !slices.Equal(got, fields) {
				t.Errorf("the ablation changes %v, want exactly %v", got, fields)
			}
			if !slices.Equal(a.Fields, fields) {
				t.Errorf("Fields = %v, want %v", a.Fields, fields)
			}
			if err := s.Latency.Validate(); err != nil {
				t.Errorf("the ablation's latency config is invalid: %v", err)
			}
			if err := s.Producer.Validate(); err != nil {
				t.Errorf("the ablation's producer config is invalid: %v", err)
			}
			if wantName := "mqfault-" + tt.name; s.Name != wantName || a.StrategyName() != wantName {
				t.Errorf("name %q (StrategyName %q), want %q", s.Name, a.StrategyName(), wantName)
			}
			if got, wantLabel := a.Label(), "mqfault − "+tt.policy; got != wantLabel {
				t.Errorf("Label() = %q, want %q", got, wantLabel)
			}
			if s.Ablated != (Ablated{Of: "mqfault", Policy: tt.policy}) {
				t.Errorf("Ablated = %+v, want of mqfault, policy %q", s.Ablated, tt.policy)
			}
			if !strings.Contains(s.Summary, a.Label()) || !strings.Contains(s.Summary, fields[0]) {
				t.Errorf("Summary = %q, want the label and the field", s.Summary)
			}
			var off *PolicyOffError
			if err := a.Applies(s); !errors.As(err, &off) {
				t.Errorf("Applies(the ablation itself) = %v, want a *PolicyOffError: the policy is off now", err)
			}
		})
	}
}

// TestAblationsOfThePreset: which ablations the preset offers is derived
// from its settings, not written down: an ablation is offered exactly when
// switching its policy off changes the preset's settings and every policy
// it requires is offered; each offered one differs from the preset in its
// Fields only; AblationNames lists them in the table's order.
func TestAblationsOfThePreset(t *testing.T) {
	p := preset()
	offered := map[string]bool{}
	var want []string
	for _, a := range Ablations() {
		s := p
		a.off(&s.Latency, &s.Producer)
		changes := len(changedFields(p, s)) > 0
		err := a.Applies(p)
		if err == nil {
			offered[a.Name] = true
			want = append(want, a.StrategyName())
		}
		t.Logf("%s: changes the preset %v, applies: %v", a.Name, changes, err)
		if !changes && err == nil {
			t.Errorf("%s: offered, but switching it off changes nothing in the preset", a.Name)
		}
		if changes && err != nil && !strings.Contains(err.Error(), "takes effect only with") {
			t.Errorf("%s: switching it off changes the preset, but Applies = %v", a.Name, err)
		}
	}
	for _, a := range Ablations() {
		for _, r := range a.Requires {
			if offered[a.Name] && !offered[r] {
				t.Errorf("%s is offered without %s, which it requires", a.Name, r)
			}
		}
	}
	got := AblationNames()
	if !slices.Equal(got, want) {
		t.Errorf("AblationNames() = %v, want %v", got, want)
	}
	if len(got) < 5 {
		t.Errorf("the preset offers %d ablations, want at least 5 (it has that many policies past the reference on)", len(got))
	}
	for _, s := range AblationStrategies() {
		a, _ := findAblation(strings.TrimPrefix(s.Name, "mqfault-"))
		if got := changedFields(p, s); !slices.Equal(got, a.Fields) {
			t.Errorf("%s changes %v, want %v", s.Name, got, a.Fields)
		}
	}
}

// TestAblationRefused: an ablation whose policy is off, or whose policy
// takes effect only with another that is off, or that extends mode v5 in a
// v4 strategy, is refused with a *PolicyOffError saying what is off; so is
// SelectStrategies of one the preset has off.
func TestAblationRefused(t *testing.T) {
	base := allOn(t)
	tests := []struct {
		ablation string
		change   func(*Strategy)
		want     string
	}{
		{"capacity-model", func(s *Strategy) { s.Latency.Capacity = nil }, `"mqfault-capacity-model" does not apply: mqfault has the policy "capacity model" off (latency.Config.Capacity)`},
		{"retry-budget", func(s *Strategy) { s.Producer.RetryBudget = 0 }, `mqfault has the policy "retry budget" off (producer.Config.RetryBudget)`},
		{"isolation-cap", func(s *Strategy) { s.Latency.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 1} }, `mqfault has the policy "isolation cap" off`},
		{"fast-probes", func(s *Strategy) { s.Latency.Detector = false }, `the policy "fast probes" takes effect only with "detector" on, and mqfault has that off`},
		{"probe-failures", func(s *Strategy) { s.Latency.Detector = false }, `the policy "probe failures" takes effect only with "detector" on`},
		{"recovered-after", func(s *Strategy) { s.Latency.Backoff = nil }, `takes effect only with "backoff" on`},
		{"recovered-after", func(s *Strategy) { s.Latency.Detector = false }, `the policy "recovered broker comes back" takes effect only with "detector" on`},
		{"parallel-probes", func(s *Strategy) { s.Latency.DetectParallel = 1 }, `mqfault has the policy "parallel probes" off`},
		{"backoff", func(s *Strategy) { s.Latency.Mode = latency.ModeV4; s.Latency.Detector = false }, `mqfault does not run latency fault tolerance in mode v5, which the policy`},
		{"detector", func(s *Strategy) { s.Latency.FaultTolerance = false }, `mqfault does not run latency fault tolerance in mode v5, which the policy`},
	}
	for _, tt := range tests {
		t.Run(tt.ablation, func(t *testing.T) {
			a, ok := findAblation(tt.ablation)
			if !ok {
				t.Fatalf("no ablation %q", tt.ablation)
			}
			s := base
			tt.change(&s)
			_, err := a.Of(s)
			var off *PolicyOffError
			if !errors.As(err, &off) || off.Strategy != "mqfault-"+tt.ablation {
				t.Fatalf("Of() error = %v, want a *PolicyOffError for mqfault-%s", err, tt.ablation)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to say %q", err, tt.want)
			}
		})
	}
	// One the preset itself has off, found at run time (the preset changes).
	p := preset()
	refused := 0
	for _, a := range Ablations() {
		if a.Applies(p) == nil {
			continue
		}
		refused++
		_, err := SelectStrategies("v5", a.StrategyName())
		var off *PolicyOffError
		if !errors.As(err, &off) || strings.Contains(err.Error(), "unknown") {
			t.Errorf("SelectStrategies(%s) error = %v, want it refused as off, not unknown", a.StrategyName(), err)
		}
	}
	t.Logf("%d of the table's ablations are off in the preset", refused)
}

// TestSelectAblations: SelectStrategies knows the ablations by name, and an
// unknown name's error names every built-in strategy and every ablation.
func TestSelectAblations(t *testing.T) {
	names := AblationNames()
	if len(names) == 0 {
		t.Fatal("the preset offers no ablation")
	}
	got, err := SelectStrategies(append([]string{"mqfault"}, names...)...)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		s := got[i+1]
		if s.Name != n || s.Ablated.Of != "mqfault" {
			t.Errorf("strategy %d = %s (ablation of %q), want %s of mqfault", i+1, s.Name, s.Ablated.Of, n)
		}
	}
	if slices.Contains(names, "mqfault-retry-budget") {
		s, err := SelectStrategies("mqfault-retry-budget")
		if err != nil {
			t.Fatal(err)
		}
		if got := changedFields(preset(), s[0]); s[0].Producer.RetryBudget != 0 || !slices.Equal(got, []string{"producer.Config.RetryBudget"}) {
			t.Errorf("mqfault-retry-budget changes %v of the preset (budget %v), want the retry budget off and nothing else", got, s[0].Producer.RetryBudget)
		}
	}
	_, err = SelectStrategies("mqfault", "mqfault-nope")
	if err == nil {
		t.Fatal("SelectStrategies(mqfault-nope) = nil error")
	}
	for _, n := range append(StrategyNames(), names...) {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %s", err, n)
		}
	}
	if !strings.Contains(err.Error(), `unknown strategy "mqfault-nope"`) {
		t.Errorf("error %q does not name the unknown strategy", err)
	}
}

// TestInsertAblations: the ablations go right after mqfault, those already
// chosen are not repeated, and without mqfault there is nothing to compare
// them with.
func TestInsertAblations(t *testing.T) {
	names := AblationNames()
	strats, err := SelectStrategies("v5", "mqfault", names[0], "off")
	if err != nil {
		t.Fatal(err)
	}
	got, err := InsertAblations(strats)
	if err != nil {
		t.Fatal(err)
	}
	var gotNames []string
	for _, s := range got {
		gotNames = append(gotNames, s.Name)
	}
	want := append(append([]string{"v5", "mqfault"}, names[1:]...), names[0], "off")
	if !slices.Equal(gotNames, want) {
		t.Errorf("InsertAblations() = %v, want %v", gotNames, want)
	}
	if strats[2].Name != names[0] {
		t.Error("InsertAblations changed its argument")
	}
	if _, err := InsertAblations(strats[:1]); err == nil || !strings.Contains(err.Error(), "mqfault") {
		t.Errorf("InsertAblations(v5) error = %v, want one naming mqfault", err)
	}
}

// foldedReport runs the mixed golden scenario with v5, mqfault, a copy of
// mqfault marked as its ablation (same run, so folded everywhere) and v5's
// settings marked as one (different numbers); then it adds a copy of
// mqfault's result whose timeline differs (same numbers, another run).
func foldedReport(t *testing.T) *Report {
	t.Helper()
	strats, err := SelectStrategies("v5", "mqfault")
	if err != nil {
		t.Fatal(err)
	}
	same := strats[1]
	same.Name, same.Ablated = "mqfault-same", Ablated{Of: "mqfault", Policy: "nothing"}
	other := strats[0]
	other.Name, other.Ablated = "mqfault-other", Ablated{Of: "mqfault", Policy: "everything"}
	rep := mustRun(t, loadTestScenario(t, "mixed"), WithStrategies(strats[0], strats[1], same, other))
	numbers := rep.Results[1]
	numbers.Name, numbers.Ablated = "mqfault-numbers", Ablated{Of: "mqfault", Policy: "timing"}
	numbers.Timeline = slices.Clone(numbers.Timeline)
	numbers.Timeline[0].Isolated = append(slices.Clone(numbers.Timeline[0].Isolated), Span{From: 0, To: time.Second})
	rep.Results = append(rep.Results, numbers)
	return rep
}

// TestAblationFolded: a row equal to its base's in every number is folded
// (the table names it under the table, the JSON keeps its numbers and says
// same_as_base); one with the base's numbers but another run is folded in
// the table and said so; a different one is a row, in the JSON with
// same_as_base false. pkg/sim/report's TestReportAblationFolded checks
// the page.
func TestAblationFolded(t *testing.T) {
	rep := foldedReport(t)
	for i, want := range []Sameness{Differs, Differs, SameRun, Differs, SameNumbers} {
		b, got := rep.SameAsBase(i)
		if got != want || (want != Differs && b != 1) {
			t.Errorf("SameAsBase(%s) = %d, %v; want 1, %v", rep.Results[i].Name, b, got, want)
		}
	}
	var tab bytes.Buffer
	if err := rep.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	text := tab.String()
	if strings.Contains(text, "  mqfault-same ") || strings.Contains(text, "  mqfault-numbers ") {
		t.Errorf("the table has a row for a folded ablation:\n%s", text)
	}
	if !strings.Contains(text, "\n  mqfault-other ") {
		t.Errorf("the table has no row for the different ablation:\n%s", text)
	}
	for _, want := range []string{
		"\nSame as mqfault in every number (the policy changed nothing here): mqfault-same.\n",
		"\nSame numbers as mqfault, a different run over time (isolations or per-second series; see --report): mqfault-numbers.\n",
		"\nAblations: mqfault-POLICY is mqfault with that one policy switched off.\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the table does not say %q:\n%s", want, text)
		}
	}

	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Strategies []struct {
			Name     string        `json:"name"`
			Sends    int64         `json:"sends"`
			Ablation *jsonAblation `json:"ablation"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Strategies) != 5 {
		t.Fatalf("the JSON has %d strategies, want 5 (folded ones too)", len(doc.Strategies))
	}
	if a := doc.Strategies[0].Ablation; a != nil {
		t.Errorf("v5's JSON has an ablation %+v", a)
	}
	if a := doc.Strategies[2].Ablation; a == nil || *a != (jsonAblation{Of: "mqfault", Off: "nothing", SameAsBase: true}) || doc.Strategies[2].Sends != rep.Results[1].Sends {
		t.Errorf("the folded ablation's JSON = %+v, %d sends; want of mqfault, same_as_base, mqfault's sends", a, doc.Strategies[2].Sends)
	}
	if a := doc.Strategies[3].Ablation; a == nil || a.SameAsBase {
		t.Errorf("the different ablation's JSON = %+v, want same_as_base false", a)
	}
	if a := doc.Strategies[4].Ablation; a == nil || !a.SameAsBase {
		t.Errorf("the same-numbers ablation's JSON = %+v, want same_as_base true (the JSON has no series)", a)
	}
}

// TestSameNumbers: every field of Result that the table or the JSON shows
// takes part in the comparison that folds a row (a field added to Result
// must be added there, or listed here as not a number of the tables).
func TestSameNumbers(t *testing.T) {
	notNumbers := map[string]bool{"Name": true, "Summary": true, "Ablated": true, "Series": true, "Timeline": true, "Wall": true}
	base := foldedReport(t).Results[1]
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if notNumbers[f.Name] {
			continue
		}
		changed := base
		changed.Brokers = slices.Clone(base.Brokers)
		v := reflect.ValueOf(&changed).Elem().Field(i)
		switch v.Kind() {
		case reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Struct: // Percentiles
			v.Field(v.NumField() - 1).SetInt(v.Field(v.NumField()-1).Int() + 1)
		case reflect.Slice: // Brokers
			changed.Brokers[len(changed.Brokers)-1].Failures++
		case reflect.Pointer: // Fleet: its peak is in the table
			changed.Fleet = &FleetResult{Producers: 2, Peak: 0.5}
		default:
			t.Fatalf("Result.%s is a %v: teach the test (and sameNumbers) about it", f.Name, v.Kind())
		}
		if sameNumbers(&base, &changed) {
			t.Errorf("a change of Result.%s leaves sameNumbers true", f.Name)
		}
	}
	if copy := base; !sameNumbers(&base, &copy) {
		t.Error("sameNumbers(r, r) = false")
	}
}

// TestAblationBaseMissing: an ablation run without its base is an ordinary
// row (nothing to fold into; pkg/sim/report's TestReportAblationBaseMissing
// checks it is drawn with the others).
func TestAblationBaseMissing(t *testing.T) {
	strats, err := SelectStrategies("v5", AblationNames()[0])
	if err != nil {
		t.Fatal(err)
	}
	rep := mustRun(t, loadTestScenario(t, "small"), WithStrategies(strats...))
	if b, same := rep.SameAsBase(1); same != Differs || b != -1 {
		t.Errorf("SameAsBase = %d, %v without the base in the report, want -1, Differs", b, same)
	}
}

// TestGoldenAblation compares the table and the JSON of `mqfault sim
// --ablation` on two golden scenarios with checked-in files (NAME-ablation.txt
// and .json): the ablation rows, the folded ones' note, the JSON's marks.
// `go test ./pkg/sim -run TestGolden -update` rewrites them with the other
// golden files.
func TestGoldenAblation(t *testing.T) {
	strats, err := InsertAblations(Strategies())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mixed", "open"} {
		t.Run(name, func(t *testing.T) {
			rep := mustRun(t, loadTestScenario(t, name), WithStrategies(strats...))
			var table bytes.Buffer
			if err := rep.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			for ext, got := range map[string][]byte{".json": jsonOf(t, rep), ".txt": table.Bytes()} {
				path := filepath.Join("testdata", "golden", name+"-ablation"+ext)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
				}
			}
		})
	}
}

// TestAblationsCoverThePreset: every setting in which the mqfault preset
// differs from RocketMQ 5.3.3's defaults is a policy the table can switch
// off, or a companion setting of one (a bound or a rate that does nothing
// with its policy off), or fault tolerance itself (which v5 has on too): a
// policy the preset turns on without an ablation fails here.
func TestAblationsCoverThePreset(t *testing.T) {
	companions := map[string]string{
		"latency.Config.FaultTolerance":    "v5's own (sendLatencyFaultEnable)",
		"latency.Config.BusyIsolateAfter":  "busy-is-load",
		"producer.Config.RetryBudgetFloor": "retry-budget",
	}
	covered := map[string]bool{}
	for _, a := range Ablations() {
		for _, f := range a.Fields {
			covered[f] = true
		}
	}
	ref := Strategies()[2] // v5
	if ref.Name != "v5" {
		t.Fatalf("Strategies()[2] = %s, want v5", ref.Name)
	}
	ref.Latency.FaultTolerance = false
	t.Logf("the preset past v5: %v", changedFields(ref, preset()))
	for _, f := range changedFields(ref, preset()) {
		if !covered[f] && companions[f] == "" {
			t.Errorf("the preset sets %s past the reference, and no ablation switches it off", f)
		}
	}
}
