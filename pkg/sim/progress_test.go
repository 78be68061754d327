package sim

import (
	"sync"
	"testing"
)

// TestProgressWithinAVirtualSecond checks that progress is reported before
// the first virtual second is done: where one virtual second takes long to
// simulate (256 brokers of 1024 queues, all down), a report per virtual
// second left a terminal without a progress bar for a minute.
func TestProgressWithinAVirtualSecond(t *testing.T) {
	sc, err := Parse([]byte(`name: fine-progress
duration: 2s
seed: 1
senders: 4
rate: 4000
brokers:
  - {name: a, queues: 2, latency: {median: 2ms, p99: 10ms}}
  - {name: b, queues: 2, latency: {median: 2ms, p99: 10ms}}
`))
	if err != nil {
		t.Fatal(err)
	}
	strats, err := SelectStrategies("v5")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []float64
	mustRun(t, sc, WithStrategies(strats...), WithProgress(func(done float64) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, done)
	}))
	// 4000 sends a second: the first virtual second is half the run.
	var early int
	for _, d := range seen {
		if d > 0 && d < 0.5 {
			early++
		}
	}
	if early < 5 {
		t.Errorf("progress reported %d times in the first virtual second (all: %v), want at least 5", early, seen)
	}
}
