package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// bigScenario is issue 21's scenario within every per-field limit that took
// minutes and a gigabyte: 256 brokers of 1,024 queues, an open load of 10^6
// sends/s for 5 s, every broker blackholed throughout.
func bigScenario() *Scenario {
	sc := &Scenario{Name: "big", Duration: 5 * time.Second, Seed: 1, Load: LoadOpen, Rate: 1e6}
	for i := range MaxBrokers {
		name := fmt.Sprintf("b%d", i)
		sc.Brokers = append(sc.Brokers, Broker{Name: name, Queues: MaxQueues,
			Latency: Latency{Median: 3 * time.Millisecond, P99: 20 * time.Millisecond}})
		sc.Events = append(sc.Events, Event{Broker: name, At: 0, For: sc.Duration, State: StateBlackhole})
	}
	return sc
}

// TestScenarioTooLarge checks that a scenario whose run would take too long
// or too much memory, though each field is within its own limit, is refused
// by validation (so at once, before any run) with an error naming the
// product of sizes that is too large and its factors. It tests the
// validation, never the run.
func TestScenarioTooLarge(t *testing.T) {
	tests := []struct {
		name string
		sc   func() *Scenario
		want []string // in the one error
	}{
		{"sends x queues", bigScenario, []string{
			"rate x duration x queues", "5000000 sends", "262144 queues", "1.31e+12"}},
		{"seconds x brokers", func() *Scenario {
			sc := bigScenario()
			sc.Duration, sc.Rate, sc.Events = MaxDuration, 10, nil
			for i := range sc.Brokers {
				sc.Brokers[i].Queues = 1
			}
			return sc
		}, []string{"(duration + send timeout) x brokers", "86404 seconds", "256 brokers"}},
		{"producers x brokers x duration", func() *Scenario {
			sc := bigScenario()
			sc.Brokers, sc.Events = sc.Brokers[:64], nil
			for i := range sc.Brokers {
				sc.Brokers[i].Queues = 1
			}
			sc.Duration, sc.Load, sc.Rate, sc.Senders, sc.Producers = time.Minute, LoadClosed, 5000, 5000, 5000
			return sc
		}, []string{"producers x brokers x duration", "5000 producers x 64 brokers x 1m0s", "1.92e+07"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.sc().Validate()
			if !errors.Is(err, ErrInvalidScenario) {
				t.Fatalf("Validate() = %v, want ErrInvalidScenario", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to name %q", err, w)
				}
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("Validate() = %q, want one problem", err)
			}
			// Run refuses it the same way, before simulating anything.
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a run that started would end with ctx's error instead
			if _, err := Run(ctx, tt.sc()); !errors.Is(err, ErrInvalidScenario) {
				t.Errorf("Run() error = %v, want ErrInvalidScenario", err)
			}
		})
	}
}
