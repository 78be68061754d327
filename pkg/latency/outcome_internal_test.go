package latency

import "testing"

// TestRulesEveryClass: every mode's update rules have a row for every class
// on every path. A row left out is the zero rule, which no row written is:
// UpdateFor would read it as a transport failure, and this test fails.
func TestRulesEveryClass(t *testing.T) {
	if len(modeSpecs) == 0 {
		t.Fatal("no modes registered")
	}
	for mode := range modeSpecs {
		rules := rulesFor(mode)
		for p := range numPaths {
			for _, c := range Classes() {
				if rules[p][c] == (rule{}) {
					t.Errorf("mode %s: no update rule for class %s on path %s", mode, c, p)
				}
			}
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
