package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/sim"
)

// simScenario is a small scenario, so the command's tests run fast.
const simScenario = `name: cli
duration: 3s
seed: 2
senders: 2
rate: 200
brokers:
  - {name: a, queues: 2, latency: {median: 2ms, p99: 10ms}}
  - {name: b, queues: 2, latency: {median: 2ms, p99: 10ms}}
events:
  - {broker: b, at: 1s, for: 1s, state: down}
`

func writeSimScenario(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSimCommand(t *testing.T) {
	good := writeSimScenario(t, simScenario)
	bad := writeSimScenario(t, strings.Replace(simScenario, "state: down", "state: sleepy", 1))
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string // must contain
		stderr   string // must contain
		noStdout bool
	}{
		{"table", []string{"sim", "--scenario", good}, 0, "v5+detector", "sends/s", false},
		{"json", []string{"sim", "--scenario", good, "--json", "--seed", "9"}, 0, `"seed": 9`, "", false},
		{"print scenario", []string{"sim", "--print-scenario"}, 0, "name: default", "", false},
		{"help", []string{"sim", "--help"}, 0, "usage: mqfault sim", "", false},
		{"some strategies", []string{"sim", "--scenario", good, "--strategies", "v5,off"}, 0, "  v5 ", "", false},
		{"unknown strategy", []string{"sim", "--strategies", "v5,v6"}, exitUsage, "",
			"mqfault sim: --strategies: unknown strategy \"v6\" (known: off, v4, v5, v5+detector, mqfault, client-go; ablations: " + strings.Join(sim.AblationNames(), ", ") + ")\n", true},
		{"ablation without mqfault", []string{"sim", "--scenario", good, "--ablation", "--strategies", "v5"}, exitUsage, "",
			"mqfault sim: --ablation: the ablations change the mqfault strategy, which is not among the strategies to run (add it to --strategies)\n", true},
		{"print scenario ablation", []string{"sim", "--print-scenario", "--ablation"}, exitUsage, "", "--ablation does not apply", true},
		{"print scenario file", []string{"sim", "--print-scenario", "--scenario", good}, 0, simScenario, "", false},
		{"print scenario stdin", []string{"sim", "--scenario", "-", "--print-scenario"}, 0, "name: from-stdin", "", false},
		{"print scenario invalid", []string{"sim", "--print-scenario", "--scenario", bad}, exitUsage, "", "is not a valid scenario", true},
		{"print scenario seed", []string{"sim", "--print-scenario", "--seed", "3"}, exitUsage, "", "--seed does not apply", true},
		{"stdin", []string{"sim", "--scenario", "-", "--strategies", "v5"}, 0, "from-stdin", "", false},
		{"stdin interspersed", []string{"sim", "--scenario", "-", "--strategies", "v5", "--json", "--seed", "4"}, 0, `"seed": 4`, "", false},
		{"bad flag", []string{"sim", "--bogus"}, exitUsage, "", "unknown flag --bogus", true},
		{"bad seed", []string{"sim", "--seed", "-1"}, exitUsage, "", "--seed -1: want a whole number", true},
		{"extra argument", []string{"sim", "x.yaml"}, exitUsage, "", `unexpected argument "x.yaml"`, true},
		{"empty strategy name", []string{"sim", "--scenario", "-", "--strategies", "v4,"}, exitUsage, "", `unknown strategy ""`, true},
		{"missing file", []string{"sim", "--scenario", filepath.Join(t.TempDir(), "none.yaml")}, exitUsage, "", "no such file", true},
		{"invalid scenario", []string{"sim", "--scenario", bad}, exitUsage, "",
			`is not a valid scenario:` + "\n  " + bad + `:10: events[0].state: "sleepy" is not one of down, blackhole, slow, busy, flapping, stall, gone`, true},
		{"unwritable report", []string{"sim", "--scenario", good, "--report", filepath.Join(t.TempDir(), "no", "r.html")}, 1, "", "--report: open", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			stdin := strings.Replace(simScenario, "name: cli", "name: from-stdin", 1)
			code := run(tt.args, strings.NewReader(stdin), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("run(%v) = %d, want %d; stderr:\n%s", tt.args, code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.stderr)
			}
			if tt.noStdout && stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

// TestSimJSON checks the --json shape and that one seed gives the same bytes.
func TestSimJSON(t *testing.T) {
	path := writeSimScenario(t, simScenario)
	var outs [2]bytes.Buffer
	for i := range outs {
		var stderr bytes.Buffer
		if code := run([]string{"sim", "--scenario", path, "--json"}, nil, &outs[i], &stderr); code != 0 {
			t.Fatalf("run() = %d; stderr:\n%s", code, stderr.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("stderr = %q with --json, want nothing (not a terminal)", stderr.String())
		}
	}
	if !bytes.Equal(outs[0].Bytes(), outs[1].Bytes()) {
		t.Fatalf("two runs differ:\n%s\n%s", outs[0].String(), outs[1].String())
	}
	var got struct {
		Scenario   string `json:"scenario"`
		Seed       uint64 `json:"seed"`
		Strategies []struct {
			Name                 string `json:"name"`
			Sends                int64  `json:"sends"`
			Succeeded            int64  `json:"succeeded"`
			Failed               int64  `json:"failed"`
			Attempts             int64  `json:"attempts"`
			FirstAttemptFailures int64  `json:"first_attempt_failures"`
			Retries              int64  `json:"retries"`
			RetriesRefused       int64  `json:"retries_refused"`
			Waited               int64  `json:"waited"`
			BusyAnswers          int64  `json:"busy_answers"`
			LatencyMS            struct {
				P50, P99, P999, Max float64
			} `json:"latency_ms"`
			Brokers map[string]struct {
				Attempts int64 `json:"attempts"`
				Failures int64 `json:"failures"`
			} `json:"brokers"`
			Timeline map[string]struct {
				Isolated         [][2]float64 `json:"isolated_s"`
				Unreachable      [][2]float64 `json:"unreachable_s"`
				StillIsolated    bool         `json:"still_isolated"`
				StillUnreachable bool         `json:"still_unreachable"`
			} `json:"timeline"`
		} `json:"strategies"`
	}
	dec := json.NewDecoder(bytes.NewReader(outs[0].Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("the JSON does not have the documented shape: %v\n%s", err, outs[0].String())
	}
	if got.Scenario != "cli" || got.Seed != 2 || len(got.Strategies) < 4 || got.Strategies[0].Name != "off" {
		t.Errorf("JSON = %+v, want scenario cli, seed 2, off first among 4 or more strategies", got)
	}
	isolatedB := false
	for _, s := range got.Strategies {
		if s.Sends != s.Succeeded+s.Failed || len(s.Brokers) != 2 || s.LatencyMS.P50 <= 0 || s.Timeline == nil {
			t.Errorf("strategy %+v: inconsistent", s)
		}
		if b, ok := s.Timeline["b"]; ok && len(b.Isolated) > 0 && b.Isolated[0][0] >= 1 {
			isolatedB = true
		}
	}
	if !isolatedB {
		t.Error("no strategy's timeline isolates b, which is down from 1 s")
	}
}

func TestSimReport(t *testing.T) {
	path := writeSimScenario(t, simScenario)
	report := filepath.Join(t.TempDir(), "r.html")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"sim", "--scenario", path, "--report", report}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("run() = %d; stderr:\n%s", code, stderr.String())
	}
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) || !bytes.Contains(page, []byte("<svg")) {
		t.Errorf("the report is not an HTML page with charts: %.200s", page)
	}
	if !strings.Contains(stderr.String(), "report: "+report) {
		t.Errorf("stderr = %q, want it to name the report", stderr.String())
	}
}

// TestSimStdinInvalid checks that a scenario read from standard input is
// validated like a file, its problems named with their lines.
func TestSimStdinInvalid(t *testing.T) {
	var stdout, stderr bytes.Buffer
	bad := strings.Replace(simScenario, "state: down", "state: sleepy", 1)
	code := run([]string{"sim", "--scenario", "-"}, strings.NewReader(bad), &stdout, &stderr)
	want := "mqfault sim: standard input is not a valid scenario:\n  standard input:10: events[0].state: \"sleepy\" is not one of"
	if code != exitUsage || !strings.HasPrefix(stderr.String(), want) || stdout.Len() > 0 {
		t.Errorf("mqfault sim --scenario - = exit %d, stdout %q, stderr %q; want %d, nothing, %q", code, stdout.String(), stderr.String(), exitUsage, want)
	}
}

// TestProgressBar checks the bar: none unless stderr is a terminal, drawn
// at once, then at most ten times a second, and erased.
func TestProgressBar(t *testing.T) {
	if newProgressBar(&bytes.Buffer{}) != nil {
		t.Error("newProgressBar(a buffer) != nil: a bar on something that is not a terminal")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if newProgressBar(f) != nil {
		t.Error("newProgressBar(a file) != nil: a bar on something that is not a terminal")
	}
	var buf bytes.Buffer
	b := &progressBar{w: &buf, start: time.Now()}
	b.set(0)
	if !strings.Contains(buf.String(), "simulating [") || !strings.Contains(buf.String(), "0.0%") {
		t.Errorf("first draw = %q, want the bar at 0.0%%", buf.String())
	}
	n := buf.Len()
	b.set(0.5) // within 100 ms of the first: skipped
	if buf.Len() != n {
		t.Errorf("a second draw within 100 ms: %q", buf.String()[n:])
	}
	b.set(1) // the end is always drawn
	if !strings.Contains(buf.String()[n:], "100.0%") {
		t.Errorf("draw at the end = %q, want 100.0%%", buf.String()[n:])
	}
	b.clear()
	if !strings.HasSuffix(buf.String(), "\r") {
		t.Errorf("clear() did not return to the line's start: %q", buf.String())
	}
}

// TestSimInterruptedInProcess cancels a run the way a signal does: exit 130,
// one line, nothing on stdout, and no half-written report left behind.
func TestSimInterruptedInProcess(t *testing.T) {
	path := writeSimScenario(t, strings.Replace(simScenario, "duration: 3s", "duration: 1h", 1))
	report := filepath.Join(t.TempDir(), "r.html")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	code := runContext(ctx, []string{"sim", "--scenario", path, "--report", report}, nil, &stdout, &stderr)
	if code != exitInterrupted || stderr.String() != "mqfault sim: interrupted\n" || stdout.Len() > 0 {
		t.Errorf("interrupted sim = exit %d, stdout %q, stderr %q; want %d, nothing, one line", code, stdout.String(), stderr.String(), exitInterrupted)
	}
	if _, err := os.Stat(report); !os.IsNotExist(err) {
		t.Errorf("the report %s is left behind after the interrupt (stat: %v)", report, err)
	}
}

// simRows returns the strategy names of the table's rows, in order.
func simRows(t *testing.T, table string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(table, "\n  strategy ")
	if !ok {
		t.Fatalf("no table header in:\n%s", table)
	}
	rest = rest[strings.Index(rest, "\n")+1:]
	var rows []string
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		rows = append(rows, strings.Fields(line)[0])
	}
	return rows
}

// TestSimAblation: --ablation appends every ablation the preset offers
// right after mqfault (before the strategies after it); each is a row or,
// equal to mqfault in every number, named in the note under the table; the
// JSON carries every one, marked; the report has an Ablations section.
func TestSimAblation(t *testing.T) {
	path := writeSimScenario(t, simScenario)
	names := sim.AblationNames()
	if len(names) < 5 {
		t.Fatalf("the preset offers %d ablations, want at least 5", len(names))
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"sim", "--scenario", path, "--strategies", "v5,mqfault,off", "--ablation"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	rows := simRows(t, out)
	var note string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Same as mqfault in every number") || strings.HasPrefix(line, "Same numbers as mqfault") {
			note += line
		}
	}
	var want []string
	for _, n := range names {
		if !strings.Contains(note, " "+n+",") && !strings.Contains(note, " "+n+".") {
			want = append(want, n)
		}
	}
	want = append(append([]string{"v5", "mqfault"}, want...), "off")
	if strings.Join(rows, " ") != strings.Join(want, " ") {
		t.Errorf("rows %v, want %v (folded: %q)\n%s", rows, want, note, out)
	}
	if !strings.Contains(out, "Ablations: mqfault-POLICY is mqfault with that one policy switched off.") {
		t.Errorf("no note on the ablation rows:\n%s", out)
	}

	stdout.Reset()
	report := filepath.Join(t.TempDir(), "r.html")
	if code := run([]string{"sim", "--scenario", path, "--ablation", "--json", "--report", report}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	var doc struct {
		Strategies []struct {
			Name     string `json:"name"`
			Ablation *struct {
				Of         string `json:"of"`
				Off        string `json:"off"`
				SameAsBase bool   `json:"same_as_base"`
			} `json:"ablation"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, s := range doc.Strategies {
		got = append(got, s.Name)
		if (i >= len(sim.StrategyNames())) != (s.Ablation != nil) || s.Ablation != nil && (s.Ablation.Of != "mqfault" || s.Ablation.Off == "") {
			t.Errorf("strategy %s: ablation %+v", s.Name, s.Ablation)
		}
	}
	if want := append(sim.StrategyNames(), names...); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("JSON strategies %v, want %v", got, want)
	}
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("<h2>Ablations</h2>")) {
		t.Error("the report has no Ablations section")
	}
	for _, n := range names {
		if !bytes.Contains(page, []byte("<h2>"+n+"</h2>")) {
			t.Errorf("the report has no section for %s", n)
		}
	}
}

// TestSimStrategiesAblation: an ablation is a strategy --strategies takes
// by name; one whose policy the preset has off is refused saying so.
func TestSimStrategiesAblation(t *testing.T) {
	path := writeSimScenario(t, simScenario)
	var stdout, stderr bytes.Buffer
	code := run([]string{"sim", "--scenario", path, "--strategies", "mqfault,mqfault-retry-budget"}, nil, &stdout, &stderr)
	if !slices.Contains(sim.AblationNames(), "mqfault-retry-budget") {
		// The lead turned the budget off in the preset: it must be refused.
		if code != exitUsage || !strings.Contains(stderr.String(), `"mqfault-retry-budget" does not apply`) {
			t.Errorf("exit %d, stderr %q; want the ablation refused", code, stderr.String())
		}
		return
	}
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	if rows := simRows(t, out); !(len(rows) == 2 && rows[1] == "mqfault-retry-budget" ||
		len(rows) == 1 && strings.Contains(out, "\nSame ") && strings.Contains(out, "): mqfault-retry-budget.\n")) {
		t.Errorf("rows %v: want mqfault-retry-budget as a row or folded\n%s", rows, out)
	}
	for _, a := range sim.Ablations() {
		if slices.Contains(sim.AblationNames(), a.StrategyName()) {
			continue
		}
		stdout.Reset()
		stderr.Reset()
		code := run([]string{"sim", "--scenario", path, "--strategies", "mqfault," + a.StrategyName()}, nil, &stdout, &stderr)
		if want := "mqfault sim: --strategies: ablation \"" + a.StrategyName() + "\" does not apply: "; code != exitUsage || !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("--strategies %s: exit %d, stderr %q; want %d and %q", a.StrategyName(), code, stderr.String(), exitUsage, want)
		}
	}
}
