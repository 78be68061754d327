package latency

import "testing"

// TestModeSpecsComplete: every registered mode has every part of its spec:
// a name of its own, its cascade, durations, isolation charge, update rule,
// an update rule row for every class on every path (a row left out is the
// zero rule, which no row written is) and a send rule for every class.
func TestModeSpecsComplete(t *testing.T) {
	if len(modes) == 0 || modes[0].mode != ModeV5 {
		t.Fatalf("modes = %d registered, want the default ModeV5 first", len(modes))
	}
	if len(modeSpecs) != len(modes) {
		t.Errorf("%d modes registered, %d distinct names", len(modes), len(modeSpecs))
	}
	for _, spec := range modes {
		mode := spec.mode
		if mode == "" || spec.about == "" {
			t.Errorf("mode %q: a spec without a name or an about (%q)", mode, spec.about)
		}
		if modeSpecs[mode] != spec || !mode.Valid() {
			t.Errorf("mode %s: not found by its name", mode)
		}
		if spec.cascade == nil || spec.cascade(&Strategy{}) == nil {
			t.Errorf("mode %s: no cascade", mode)
		}
		if spec.durations == nil || spec.durations() == nil {
			t.Errorf("mode %s: no duration table", mode)
		}
		if spec.isolationLatency <= 0 {
			t.Errorf("mode %s: isolation latency %v, want positive", mode, spec.isolationLatency)
		}
		if spec.update == nil {
			t.Errorf("mode %s: no update rule", mode)
		}
		if spec.rules == nil {
			t.Errorf("mode %s: no outcome rules", mode)
			continue
		}
		for p := range numPaths {
			for _, c := range Classes() {
				if spec.rules[p][c] == (rule{}) {
					t.Errorf("mode %s: no update rule for class %s on path %s", mode, c, p)
				}
			}
		}
		if spec.send.RetryCodes == nil {
			t.Errorf("mode %s: no default retry codes", mode)
		}
		for _, c := range Classes() {
			if r := spec.send.Classes[c]; r.Sync == NextNone || r.Async == NextNone {
				t.Errorf("mode %s: no send rule for class %s (%+v)", mode, c, r)
			}
		}
		if info, ok := mode.Info(); !ok || info.Mode != mode || info.Send.Classes != spec.send.Classes {
			t.Errorf("mode %s: Info() = %+v, %t, not its spec", mode, info, ok)
		}
	}
}

// TestRulesMissingRow: a class without a row is updated as a transport
// failure on PathSend, never as answered.
func TestRulesMissingRow(t *testing.T) {
	var rules ruleTable
	rules[PathSend][ClassTransportFailed] = ruleTransport
	for _, c := range Classes() {
		if got := rules.rule(PathAsyncAnswer, c); got != ruleTransport {
			t.Errorf("missing row for %s = %+v, want the transport failure %+v", c, got, ruleTransport)
		}
	}
}
