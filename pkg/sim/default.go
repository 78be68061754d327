package sim

import (
	_ "embed"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the YAML text of the default scenario, comments
// included, as a starting point for scenarios of one's own.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// DefaultScenario returns the scenario `mqfault sim` runs when given none:
// four brokers of four queues; over 90 s of virtual time one goes down for
// 30 s, one turns slow for 30 s, and one answers SYSTEM_BUSY to 40% of the
// sends for 25 s. Each call returns a new Scenario.
func DefaultScenario() *Scenario {
	s, err := Parse(defaultYAML)
	if err != nil {
		// The embedded file is tested; this cannot happen in a released binary.
		panic("sim: the embedded default scenario is invalid: " + err.Error())
	}
	return s
}
