package latency

import (
	"sync"
	"testing"
)

// TestStageShardsSpread: goroutines running at once count on different
// shards (a StageCounter that put them on one would pass its cache line
// between cores on every pick). Eight live goroutines, whose stacks are
// neighbours, must use at least six of the 32 shards.
func TestStageShardsSpread(t *testing.T) {
	const goroutines = 8
	var wg, ready sync.WaitGroup
	start := make(chan struct{})
	shards := make([]uint64, goroutines)
	for g := range goroutines {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			<-start // all alive at once: no stack is reused
			shards[g] = shardOfGoroutine()
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()
	distinct := map[uint64]bool{}
	for _, s := range shards {
		if s >= stageShards {
			t.Fatalf("shardOfGoroutine() = %d, want < %d", s, stageShards)
		}
		distinct[s] = true
	}
	if len(distinct) < 6 {
		t.Errorf("%d goroutines counted on %d shards %v, want at least 6", goroutines, len(distinct), shards)
	}
}
