package sim_test

import (
	"context"
	"fmt"
	"os"

	"github.com/mqfault/mqfault/pkg/sim"
)

// ExampleRun compares two strategies on a scenario written in YAML: one of
// two brokers is down for half the run.
func ExampleRun() {
	sc, err := sim.Parse([]byte(`
name: one-down
duration: 4s
seed: 1
senders: 2
rate: 200
brokers:
  - {name: a, queues: 2, latency: {median: 2ms, p99: 10ms}}
  - {name: b, queues: 2, latency: {median: 2ms, p99: 10ms}}
events:
  - {broker: b, at: 1s, for: 2s, state: down}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	strategies, err := sim.SelectStrategies("off", "v5")
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := sim.Run(context.Background(), sc, sim.WithStrategies(strategies...))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rep.Results {
		fmt.Printf("%s: %d sends, %d failed, %d first attempts failed\n", r.Name, r.Sends, r.Failed, r.FirstAttemptFailures)
	}
	// Output:
	// off: 797 sends, 0 failed, 250 first attempts failed
	// v5: 797 sends, 0 failed, 1 first attempts failed
}

// ExampleParse shows the error a bad scenario gets: the field's path and
// line, for every problem.
func ExampleParse() {
	_, err := sim.Parse([]byte(`
name: typo
duration: 90
senders: 8
rate: 2000
brokers:
  - {name: a, queues: 4, latency: {median: 3ms, p99: 20ms}}
events:
  - {broker: a, at: 10s, for: 30s, state: sleepy}
`))
	fmt.Println(err)
	// Output:
	// line 3: duration: "90" is not a duration (write it as 250ms, 30s or 1m30s)
	// line 9: events[0].state: "sleepy" is not one of down, blackhole, slow, busy, flapping, stall, gone
}

// ExampleReport_WriteTable prints the table `mqfault sim` prints, for the
// default scenario and the v5 strategy.
func ExampleReport_WriteTable() {
	v5, _ := sim.SelectStrategies("v5")
	rep, err := sim.Run(context.Background(), sim.DefaultScenario(), sim.WithStrategies(v5...))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = rep.WriteTable(os.Stdout)
}
