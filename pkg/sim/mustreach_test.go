package sim

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMustReachJudge checks the must-reach rules on made-up figures: each
// rule at its bound and past it, which runs each rule judges, and that the
// failing runs are the ones named.
func TestMustReachJudge(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	sc := func(failed int64, p99 float64) Score { return Score{Failed: failed, P99: ms(p99)} }
	// faulty runs, each better than its baseline by one column, and
	// healthy runs equal to v5.
	base := func() []MustReachRun {
		return []MustReachRun{
			{Name: "f1", Faulty: true, Got: sc(70, 100), Base: sc(100, 100), V5: sc(100, 120)},  // 30% fewer failed
			{Name: "f2", Faulty: true, Got: sc(100, 79), Base: sc(100, 100), V5: sc(100, 100)},  // 21% lower p99
			{Name: "f3", Faulty: true, Got: sc(110, 105), Base: sc(100, 100), V5: sc(100, 100)}, // at both worse bounds: neutral
			{Name: "h1", Utilization: 0.95, Got: sc(0, 21), Base: sc(0, 20), V5: sc(0, 20)},     // 5% above v5's p99
			{Name: "h2", Utilization: 0.5, Got: sc(0, 10), Base: sc(0, 10), V5: sc(0, 10)},      // equal
			{Name: "busy", Utilization: 0.96, Got: sc(5, 30), Base: sc(0, 30), V5: sc(0, 30)},   // not healthy: 96%
		}
	}
	pass := func(rules []MustReachRule) []bool {
		out := make([]bool, len(rules))
		for i := range rules {
			out[i] = rules[i].Pass()
		}
		return out
	}
	failing := func(runs []MustReachRun, r MustReachRule) []string {
		var out []string
		for _, k := range r.Failing {
			out = append(out, runs[k].Name)
		}
		return out
	}

	runs := base()
	rules := JudgeMustReachRuns(runs)
	if len(rules) != 3 || rules[0].Name != RuleNeverWorse || rules[1].Name != RuleHealthy || rules[2].Name != RuleBetter {
		t.Fatalf("rules = %+v, want never worse, healthy and better", rules)
	}
	if got := pass(rules); !slices.Equal(got, []bool{true, true, true}) {
		t.Errorf("passes = %v for runs at the bounds, want all true; rules %+v", got, rules)
	}
	if r := rules[1]; r.Judged != 2 || r.Need != 2 {
		t.Errorf("healthy judged %d runs (need %d), want h1 and h2 only", r.Judged, r.Need)
	}
	if r := rules[2]; r.Judged != 3 || r.Met != 2 || r.Need != 2 || !slices.Equal(failing(runs, r), []string{"f3"}) {
		t.Errorf("better: %+v, want 2 of 3 faulty runs met, 2 needed, f3 not better", r)
	}

	cases := []struct {
		name  string
		edit  func([]MustReachRun)
		pass  []bool
		fails map[int][]string // rule index: the runs it names
	}{
		{"one more failed send past the bound", func(r []MustReachRun) { r[2].Got.Failed = 111 },
			[]bool{false, true, true}, map[int][]string{0: {"f3"}}},
		{"p99 past 1.05 x", func(r []MustReachRun) { r[2].Got.P99 = ms(105.1) },
			[]bool{false, true, true}, map[int][]string{0: {"f3"}}},
		{"a healthy run fails one send", func(r []MustReachRun) { r[4].Got.Failed = 1; r[4].Base.Failed = 1 },
			[]bool{true, false, true}, map[int][]string{1: {"h2"}}},
		{"a healthy p99 past v5's, though not the baseline's", func(r []MustReachRun) { r[3].Got.P99 = ms(21.1); r[3].Base.P99 = ms(21) },
			[]bool{true, false, true}, map[int][]string{1: {"h1"}}},
		{"a better run that is worse in the other column", func(r []MustReachRun) { r[0].Got.P99 = ms(106) },
			[]bool{false, true, false}, map[int][]string{0: {"f1"}, 2: {"f1", "f3"}}},
		{"one run better of three", func(r []MustReachRun) { r[1].Got.P99 = ms(81) },
			[]bool{true, true, false}, map[int][]string{2: {"f2", "f3"}}},
		{"a fault on the 96% run: 2 better of 4 faulty is half", func(r []MustReachRun) { r[5].Faulty = true },
			[]bool{true, true, true}, map[int][]string{2: {"f3", "busy"}}},
		{"and a third of 3 better is less", func(r []MustReachRun) { r[5].Faulty = true; r[0].Got.Failed = 90 },
			[]bool{true, true, false}, map[int][]string{2: {"f1", "f3", "busy"}}},
	}
	for _, c := range cases {
		runs := base()
		c.edit(runs)
		rules := JudgeMustReachRuns(runs)
		if got := pass(rules); !slices.Equal(got, c.pass) {
			t.Errorf("%s: passes = %v, want %v", c.name, got, c.pass)
		}
		for k, want := range c.fails {
			if got := failing(runs, rules[k]); !slices.Equal(got, want) {
				t.Errorf("%s: rule %q names %v, want %v", c.name, rules[k].Name, got, want)
			}
		}
	}

	// No run to judge: every rule passes; the text says so.
	rep := &MustReachReport{Strategy: "x", Baseline: Baseline(DefaultBaseline), Rules: JudgeMustReachRuns(nil)}
	if !rep.Pass() {
		t.Errorf("no runs: %+v, want every rule passed", rep.Rules)
	}
	// A failing run is named with what it is.
	runs = base()
	runs[4].Got.Failed, runs[4].Drawn = 3, "2 brokers, reject, open, 50%"
	rep = &MustReachReport{Strategy: "x", Baseline: Baseline(DefaultBaseline), Runs: runs, Rules: JudgeMustReachRuns(runs)}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); rep.Pass() || !strings.Contains(out, "h2") || !strings.Contains(out, "2 brokers, reject, open, 50%") ||
		!strings.Contains(out, "FAIL") || !strings.HasSuffix(out, "not reached\n") {
		t.Errorf("WriteText() =\n%s\nwant the failing run h2 named with its description, FAIL and not reached", out)
	}
}
