package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeConfig writes a configuration file called name into a new directory.
func writeConfig(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// simJSONRows runs `mqfault sim ARGS --json` and returns each strategy's entry
// by name, the name left out, and the names in order.
func simJSONRows(t *testing.T, args ...string) (map[string]map[string]any, []string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append(append([]string{"sim"}, args...), "--json"), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("mqfault sim %v = %d; stderr:\n%s", args, code, stderr.String())
	}
	var rep struct{ Strategies []map[string]any }
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]any{}
	var names []string
	for _, s := range rep.Strategies {
		name := s["name"].(string)
		names = append(names, name)
		delete(s, "name")
		rows[name] = s
	}
	return rows, names
}

// TestSimConfig: `mqfault sim --config FILE` adds a row named after the
// file that runs the file's configuration with the MQFAULT_ variables over
// it (issue 25.4): a file that sets what v5+detector is (the reference5
// preset with fault tolerance and the detector on) gives v5+detector's
// numbers under the name mine; MQFAULT_DETECTOR=false over it gives v5's.
func TestSimConfig(t *testing.T) {
	scenario := writeSimScenario(t, simScenario)
	mine := writeConfig(t, "mine.yaml", "preset: reference5\nfault_tolerance: true\ndetector: true\n")
	t.Setenv("MQFAULT_DETECTOR", "")
	rows, names := simJSONRows(t, "--scenario", scenario, "--config", mine)
	if want := []string{"off", "v4", "v5", "v5+detector", "mqfault", "mine"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("rows %v, want %v", names, want)
	}
	if !reflect.DeepEqual(rows["mine"], rows["v5+detector"]) {
		t.Errorf("mine.yaml (v5+detector's settings) ran otherwise:\n%v\n%v", rows["mine"], rows["v5+detector"])
	}
	if reflect.DeepEqual(rows["v5"], rows["v5+detector"]) {
		t.Fatal("v5 and v5+detector have one run here: the test shows nothing")
	}
	t.Setenv("MQFAULT_DETECTOR", "false")
	rows, _ = simJSONRows(t, "--scenario", scenario, "--config", mine, "--strategies", "v5")
	if !reflect.DeepEqual(rows["mine"], rows["v5"]) {
		t.Errorf("mine.yaml with MQFAULT_DETECTOR=false ran otherwise than v5:\n%v\n%v", rows["mine"], rows["v5"])
	}
	// The row is a strategy like the others: --baseline may name it.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"sim", "--scenario", scenario, "--config", mine, "--seeds", "1-2", "--baseline", "mine"}, nil, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "mine") {
		t.Errorf("--seeds with --baseline mine = %d; stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// TestSimConfigErrors: a configuration that does not load exits 2 with
// every problem of the file and the variables at once; a file whose name is
// a strategy's or an ablation's, or would make a name --strategies could
// not take, exits 2 saying so; --config does not apply to --print-scenario.
func TestSimConfigErrors(t *testing.T) {
	scenario := writeSimScenario(t, simScenario)
	bad := writeConfig(t, "bad.yaml", "detect_timeout: -1s\nretry_times: lots\nfault_tolerence: true\n")
	t.Setenv("MQFAULT_DETECT_PARALLEL", "0")
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"invalid", []string{"--config", bad}, []string{
			"mqfault sim: --config " + bad + " is not a valid mqfault configuration:\n  config: ",
			"detect_timeout", "retry_times", "fault_tolerence", "MQFAULT_DETECT_PARALLEL"}},
		{"missing", []string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, []string{"none.yaml: cannot read the configuration file", "no such file"}},
		{"preset name", []string{"--config", writeConfig(t, "mqfault.yaml", "detector: true\n")}, []string{
			`--config`, `the row would be named "mqfault"`, "rename the file"}},
		{"ablation name", []string{"--config", writeConfig(t, "mqfault-retry-budget.json", "{}")}, []string{`"mqfault-retry-budget"`}},
		{"spaced name", []string{"--config", writeConfig(t, "my settings.yaml", "detector: true\n")}, []string{`"my settings"`, "space or a comma"}},
		{"print scenario", []string{"--print-scenario", "--config", bad}, []string{"--config does not apply"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != "invalid" {
				t.Setenv("MQFAULT_DETECT_PARALLEL", "")
			}
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"sim", "--scenario", scenario}, tt.args...), nil, &stdout, &stderr)
			if code != exitUsage || stdout.Len() > 0 {
				t.Errorf("exit %d, stdout %q; want %d and nothing", code, stdout.String(), exitUsage)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr = %q, want it to contain %q", stderr.String(), w)
				}
			}
		})
	}
}
