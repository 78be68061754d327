package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simFamily is a small family, so the command's tests run fast.
const simFamily = `name: cli-family
duration: 3s
brokers: {min: 2, max: 3}
queues: 2
latency: {median: 2ms, tail: 5}
capacity: {per_broker: 100}
flow_control: {none: 1, queue: 1}
load: {senders: 2, utilization: {min: 0.5, max: 1}}
faults:
  count: 1
  at: 0.3
  for: 1s
  states: {down: {}, blackhole: {}}
`

type familyJSON struct {
	Family     string   `json:"family"`
	FamilySeed uint64   `json:"family_seed"`
	Runs       int      `json:"runs"`
	Baseline   []string `json:"baseline"`
	Rule       struct {
		FailedRatio float64 `json:"failed_ratio"`
		FailedSlack int64   `json:"failed_slack"`
		P99Ratio    float64 `json:"p99_ratio"`
		BetterRatio float64 `json:"better_ratio"`
	} `json:"rule"`
	Results []struct {
		Run      int    `json:"run"`
		Scenario string `json:"scenario"`
		Seed     uint64 `json:"seed"`
		Drawn    string `json:"drawn"`
		Baseline struct {
			Failed int64   `json:"failed"`
			P99MS  float64 `json:"p99_ms"`
		} `json:"baseline"`
		Strategies []struct {
			Name    string  `json:"name"`
			Sends   int64   `json:"sends"`
			Failed  int64   `json:"failed"`
			P99MS   float64 `json:"p99_ms"`
			Verdict string  `json:"verdict"`
		} `json:"strategies"`
	} `json:"results"`
	Totals []struct {
		Name    string `json:"name"`
		Worse   int    `json:"worse"`
		Better  int    `json:"better"`
		Neutral int    `json:"neutral"`
	} `json:"totals"`
}

func decodeStrict(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("the JSON does not have the documented shape: %v\n%s", err, data)
	}
}

// TestSimFamily: --family draws --runs scenarios at --family-seed and
// prints a line per run and the totals; --json has the documented shape
// and the same bytes twice; --keep writes the worse runs, and `sim
// --scenario` on a kept file gives that run's numbers; --report writes
// the family page.
func TestSimFamily(t *testing.T) {
	dir := t.TempDir()
	fam := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(fam, []byte(simFamily), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"sim", "--family", fam, "--runs", "3", "--strategies", "off,v5,v5+detector"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{`family "cli-family": 3 runs drawn at family seed 1; baseline: the better of v5 and v5+detector in each column`,
		"runs against the baseline (worse: failed > 1.05 x baseline + 5", "  strategy     worse  better  neutral\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), "simulated ") {
		t.Errorf("stderr = %q, want the sends simulated", stderr.String())
	}

	keep := filepath.Join(dir, "kept")
	report := filepath.Join(dir, "f.html")
	args := []string{"sim", "--family", fam, "--runs", "4", "--family-seed", "3", "--json", "--baseline", "v5", "--keep", keep, "--report", report}
	var outs [2]bytes.Buffer
	for i := range outs {
		stderr.Reset()
		if code := run(args, nil, &outs[i], &stderr); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
		}
	}
	if !bytes.Equal(outs[0].Bytes(), outs[1].Bytes()) {
		t.Fatalf("two runs differ:\n%s\n%s", outs[0].String(), outs[1].String())
	}
	var doc familyJSON
	decodeStrict(t, outs[0].Bytes(), &doc)
	if doc.Family != "cli-family" || doc.FamilySeed != 3 || doc.Runs != 4 || len(doc.Results) != 4 || strings.Join(doc.Baseline, ",") != "v5" ||
		doc.Rule.FailedRatio != 1.05 || len(doc.Totals) != 5 {
		t.Fatalf("JSON = %+v", doc)
	}
	if page, err := os.ReadFile(report); err != nil || !bytes.Contains(page, []byte("<svg")) {
		t.Errorf("the family report: %v, %.100s", err, page)
	}
	kept := 0
	for _, r := range doc.Results {
		worse := false
		for _, s := range r.Strategies {
			worse = worse || s.Verdict == "worse"
		}
		path := filepath.Join(keep, r.Scenario+".yaml")
		_, err := os.Stat(path)
		if worse != (err == nil) {
			t.Errorf("run %d: worse %v, kept file: %v", r.Run, worse, err)
		}
		if !worse {
			continue
		}
		kept++
		var replay bytes.Buffer
		if code := run([]string{"sim", "--scenario", path, "--json"}, nil, &replay, &stderr); code != 0 {
			t.Fatalf("replaying %s: exit %d; stderr:\n%s", path, code, stderr.String())
		}
		var got struct {
			Seed       uint64 `json:"seed"`
			Strategies []struct {
				Name      string `json:"name"`
				Sends     int64  `json:"sends"`
				Failed    int64  `json:"failed"`
				LatencyMS struct {
					P99 float64 `json:"p99"`
				} `json:"latency_ms"`
			} `json:"strategies"`
		}
		if err := json.Unmarshal(replay.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.Seed != r.Seed || len(got.Strategies) != len(r.Strategies) {
			t.Fatalf("replay of run %d: seed %d, %d strategies; want %d, %d", r.Run, got.Seed, len(got.Strategies), r.Seed, len(r.Strategies))
		}
		for i, s := range r.Strategies {
			g := got.Strategies[i]
			if g.Name != s.Name || g.Sends != s.Sends || g.Failed != s.Failed || g.LatencyMS.P99 != s.P99MS {
				t.Errorf("replay of run %d: %s %d sends, %d failed, p99 %v; the family run had %d, %d, %v",
					r.Run, g.Name, g.Sends, g.Failed, g.LatencyMS.P99, s.Sends, s.Failed, s.P99MS)
			}
		}
	}
	if kept == 0 {
		t.Error("no run was worse for any strategy: the --keep check shows nothing")
	}
}

func TestSimFamilyErrors(t *testing.T) {
	dir := t.TempDir()
	fam := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(fam, []byte(simFamily), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(simFamily, "blackhole: {}", "sleepy: {}", 1)+"colour: red\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--family", fam, "--seed", "3"}, "--seed does not apply to --family"},
		{[]string{"--family", fam, "--scenario", fam}, "--scenario does not apply to --family"},
		{[]string{"--runs", "3"}, "--runs applies to --family only"},
		{[]string{"--keep", dir}, "--keep applies to --family only"},
		{[]string{"--family", fam, "--runs", "0"}, "--runs 0: want 1 to"},
		{[]string{"--family", fam, "--strategies", "off,mqfault"}, "--baseline: v5 is not among the strategies to run"},
		{[]string{"--family", fam, "--baseline", "v6"}, "--baseline: v6 is not among the strategies to run"},
		{[]string{"--family", filepath.Join(dir, "none.yaml")}, "no such file"},
		{[]string{"--family", bad}, bad + " is not a valid scenario family:\n" +
			"  " + bad + ":14: colour: unknown field (want one of name, duration, send_timeout, brokers, queues, latency, capacity, flow_control, queue_wait, load, faults)\n" +
			"  " + bad + ":13: faults.states.sleepy: \"sleepy\" is not one of down, blackhole, slow, busy, flapping, stall, gone"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"sim"}, tt.args...), nil, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tt.want) || stdout.Len() > 0 {
			t.Errorf("sim %v = exit %d, stdout %q, stderr %q; want %d and %q", tt.args, code, stdout.String(), stderr.String(), exitUsage, tt.want)
		}
	}
}

// TestSimSeeds: --seeds on a scenario prints a row per strategy with each
// column's median and range and the verdicts counted per seed, or the
// JSON; on a family each run runs at each seed.
func TestSimSeeds(t *testing.T) {
	path := writeSimScenario(t, simScenario)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"sim", "--scenario", path, "--seeds", "1-3", "--strategies", "off,v5,v5+detector"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, `scenario "cli": 2 brokers, 4 queues, 3s of virtual time, 2 senders at 200 sends/s, send timeout 3s, seeds 1-3 (3)`) ||
		!strings.Contains(out, "  worse  better  neutral\n") || !strings.Contains(out, "\n  off ") {
		t.Errorf("the seeds table:\n%s", out)
	}
	stdout.Reset()
	if code := run([]string{"sim", "--scenario", path, "--seeds", "2,5", "--json", "--baseline", "v5"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	var doc struct {
		Scenario string   `json:"scenario"`
		Seeds    []uint64 `json:"seeds"`
		Baseline []string `json:"baseline"`
		Rule     struct {
			FailedRatio float64 `json:"failed_ratio"`
			FailedSlack int64   `json:"failed_slack"`
			P99Ratio    float64 `json:"p99_ratio"`
			BetterRatio float64 `json:"better_ratio"`
		} `json:"rule"`
		Strategies []struct {
			Name    string `json:"name"`
			Columns map[string]struct {
				Median float64 `json:"median"`
				Min    float64 `json:"min"`
				Max    float64 `json:"max"`
			} `json:"columns"`
			Verdicts struct {
				Worse   int `json:"worse"`
				Better  int `json:"better"`
				Neutral int `json:"neutral"`
			} `json:"verdicts"`
			PerSeed []struct {
				Seed    uint64  `json:"seed"`
				Failed  int64   `json:"failed"`
				P99MS   float64 `json:"p99_ms"`
				Verdict string  `json:"verdict"`
			} `json:"per_seed"`
		} `json:"strategies"`
	}
	decodeStrict(t, stdout.Bytes(), &doc)
	if doc.Scenario != "cli" || len(doc.Seeds) != 2 || doc.Baseline[0] != "v5" || len(doc.Strategies) != 5 || len(doc.Strategies[0].PerSeed) != 2 {
		t.Errorf("JSON = %+v", doc)
	}

	dir := t.TempDir()
	fam := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(fam, []byte(simFamily), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code := run([]string{"sim", "--family", fam, "--runs", "2", "--seeds", "1,2", "--json"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	var fdoc struct {
		Seeds   []uint64 `json:"seeds"`
		Results []struct {
			Run  int    `json:"run"`
			Seed uint64 `json:"seed"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &fdoc); err != nil {
		t.Fatal(err)
	}
	if len(fdoc.Seeds) != 2 || len(fdoc.Results) != 4 || fdoc.Results[1].Run != 1 || fdoc.Results[1].Seed != 2 {
		t.Errorf("family JSON with seeds = %+v, want runs 1 and 2 at seeds 1 and 2", fdoc)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--seeds", "1-3", "--seed", "2"}, "--seed does not apply with --seeds"},
		{[]string{"--seeds", "1-3", "--report", filepath.Join(dir, "r.html")}, "--report draws one run of a scenario"},
		{[]string{"--seeds", "3-1"}, `--seeds: "3-1" is not a range of seeds`},
		{[]string{"--seeds", "1,x"}, `--seeds: "x" is not a seed`},
		{[]string{"--baseline", "v5"}, "--baseline applies to --family or --seeds only"},
		{[]string{"--seeds", "1-2", "--strategies", "off"}, "--baseline: v5 is not among the strategies to run"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"sim", "--scenario", path}, tt.args...), nil, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tt.want) || stdout.Len() > 0 {
			t.Errorf("sim %v = exit %d, stdout %q, stderr %q; want %d and %q", tt.args, code, stdout.String(), stderr.String(), exitUsage, tt.want)
		}
	}
}
