package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseSeeds(t *testing.T) {
	for in, want := range map[string][]uint64{
		"1-5":        {1, 2, 3, 4, 5},
		"1,3,7":      {1, 3, 7},
		" 1-3, 10 ":  {1, 2, 3, 10},
		"9":          {9},
		"0-1":        {0, 1},
		"7-7,100-99": nil,
	} {
		got, err := ParseSeeds(in)
		if want == nil {
			if err == nil {
				t.Errorf("ParseSeeds(%q) = %v, want an error", in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "5-1", "1,1", "1-3,2", "1-20000", "-3", "1-", "18446744073709551615-18446744073709551615,x"} {
		if got, err := ParseSeeds(bad); err == nil {
			t.Errorf("ParseSeeds(%q) = %v, want an error", bad, got)
		}
	}
	if got, err := ParseSeeds("18446744073709551614-18446744073709551615"); err != nil || len(got) != 2 {
		t.Errorf("ParseSeeds(the last two seeds) = %v, %v", got, err)
	}
}

// TestRunSeeds: each seed's trial is the scenario's run at that seed; the
// table and the JSON give each column's median and range over the seeds
// and the verdicts counted per seed.
func TestRunSeeds(t *testing.T) {
	sc := loadTestScenario(t, "small")
	strats, err := SelectStrategies("off", "v5", "v5+detector")
	if err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{4, 1, 2}
	rep, err := RunSeeds(context.Background(), sc, SeedsConfig{Seeds: seeds, Strategies: strats})
	if err != nil {
		t.Fatal(err)
	}
	var failed [3][]float64 // per strategy, per seed
	for k, seed := range seeds {
		c := *sc
		c.Seed = seed
		one := mustRun(t, &c, WithStrategies(strats...))
		if got := rep.Trials[k]; got.Seed != seed || !reflect.DeepEqual(got.Results, numbersOnly(one.Results)) {
			t.Errorf("seed %d: trial %+v, want the run at that seed", seed, got)
		}
		for i := range strats {
			failed[i] = append(failed[i], float64(one.Results[i].Failed))
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenario   string   `json:"scenario"`
		Seeds      []uint64 `json:"seeds"`
		Strategies []struct {
			Name    string `json:"name"`
			Columns map[string]struct {
				Median, Min, Max float64
			} `json:"columns"`
			Verdicts struct{ Worse, Better, Neutral int } `json:"verdicts"`
			PerSeed  []struct {
				Seed    uint64 `json:"seed"`
				Verdict string `json:"verdict"`
			} `json:"per_seed"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Scenario != sc.Name || !slices.Equal(doc.Seeds, seeds) || len(doc.Strategies) != 3 {
		t.Fatalf("JSON %+v", doc)
	}
	for i, s := range doc.Strategies {
		sorted := slices.Sorted(slices.Values(failed[i]))
		if f := s.Columns["failed"]; f.Median != sorted[1] || f.Min != sorted[0] || f.Max != sorted[2] {
			t.Errorf("%s: failed %+v, want median %v of %v", s.Name, f, sorted[1], sorted)
		}
		if len(s.Columns) != 14 {
			t.Errorf("%s: %d columns, want the table's 14 (a closed load)", s.Name, len(s.Columns))
		}
		if v := s.Verdicts; v.Worse+v.Better+v.Neutral != 3 || len(s.PerSeed) != 3 || s.PerSeed[0].Seed != 4 {
			t.Errorf("%s: verdicts %+v, per seed %+v; want 3 seeds counted, 4 first", s.Name, v, s.PerSeed)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	text := table.String()
	t.Logf("\n%s", text)
	if !strings.Contains(text, ", seeds 4,1-2 (3)\n") || !strings.Contains(text, "  worse  better  neutral\n") {
		t.Errorf("the table does not name the seeds or the verdicts:\n%s", text)
	}
	for _, s := range strats {
		if !strings.Contains(text, "\n  "+s.Name+" ") {
			t.Errorf("the table has no row for %s", s.Name)
		}
	}
	if _, err := RunSeeds(context.Background(), sc, SeedsConfig{}); err == nil {
		t.Error("RunSeeds without seeds succeeded")
	}
}

func TestSpreadOf(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want Spread
	}{
		{[]float64{3}, Spread{3, 3, 3}},
		{[]float64{5, 1, 3}, Spread{3, 1, 5}},
		{[]float64{4, 1, 3, 2}, Spread{2, 1, 4}}, // the lower middle
	} {
		if got := spreadOf(tt.in); got != tt.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestRunFamilySeeds: with seeds, each drawn run runs at each seed (its
// drawn scenario, another seed); the totals count every run and seed; a
// kept file replays its run at its seed.
func TestRunFamilySeeds(t *testing.T) {
	f := mustFamily(t, testFamily)
	strats, err := SelectStrategies("off", "v5", "v5+detector")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunFamily(context.Background(), FamilyConfig{Family: f, Runs: 3, Seed: 5, Seeds: []uint64{1, 2}, Strategies: strats})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range rep.Runs {
		if len(run.Trials) != 2 || run.Trials[0].Seed != 1 || run.Trials[1].Seed != 2 {
			t.Fatalf("run %d: trials at %v, want seeds 1 and 2", run.Run, run.Trials)
		}
		d, _ := f.Draw(5, run.Run)
		if !reflect.DeepEqual(d.Scenario, run.Scenario) {
			t.Errorf("run %d is not the family's draw", run.Run)
		}
	}
	for _, tally := range rep.Totals() {
		if tally.Worse+tally.Better+tally.Neutral != 6 {
			t.Errorf("%+v does not count 3 runs x 2 seeds", tally)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	if !strings.Contains(table.String(), "each at seeds 1-2 (2)") || !strings.Contains(table.String(), "runs x seeds against the baseline") {
		t.Errorf("the table does not say the seeds:\n%s", table.String())
	}
	kept, err := rep.Keep(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range kept {
		sc, err := LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		i := slices.IndexFunc(rep.Runs, func(r FamilyRun) bool { return strings.HasPrefix(name, r.Scenario.Name+"-seed") })
		k := slices.IndexFunc(rep.Runs[i].Trials, func(tr Trial) bool { return tr.Seed == sc.Seed })
		if i < 0 || k < 0 || name != rep.Runs[i].Scenario.Name+"-seed"+strings.TrimPrefix(name, rep.Runs[i].Scenario.Name+"-seed") {
			t.Fatalf("%s: no such run and seed", path)
		}
		got := mustRun(t, sc, WithStrategies(strats...))
		if !reflect.DeepEqual(numbersOnly(got.Results), rep.Runs[i].Trials[k].Results) {
			t.Errorf("%s replays to other numbers", path)
		}
		if text, _ := os.ReadFile(path); !bytes.Contains(text, []byte("# Run ")) {
			t.Errorf("%s has no header", path)
		}
	}
	if len(kept) == 0 {
		t.Error("nothing kept: the replay check shows nothing")
	}
}
