package latency

import (
	"slices"
	"sync"
	"testing"
)

// TestStageShardsSpread: goroutines running at once count on different
// shards (a StageCounter that put them on one would pass its cache line
// between cores on every pick). Eight live goroutines must use at least six
// of the 32 shards in the median of 11 rounds: their stacks are neighbours
// in a fresh process, but in a long test binary they are recycled stacks at
// any address, where even a perfect hash puts eight on five shards or fewer
// about once in thirty rounds.
func TestStageShardsSpread(t *testing.T) {
	const goroutines, rounds = 8, 11
	var counts []int
	for range rounds {
		shards := spreadRound(t, goroutines)
		distinct := map[uint64]bool{}
		for _, s := range shards {
			distinct[s] = true
		}
		counts = append(counts, len(distinct))
	}
	slices.Sort(counts)
	if median := counts[rounds/2]; median < 6 {
		t.Errorf("%d goroutines counted on %v distinct shards in %d rounds (median %d), want a median of at least 6", goroutines, counts, rounds, median)
	}
}

// spreadRound starts n goroutines, all alive at once (no stack is reused
// between them), and returns the shard each counted on.
func spreadRound(t *testing.T, n int) []uint64 {
	var wg, ready sync.WaitGroup
	start := make(chan struct{})
	shards := make([]uint64, n)
	for g := range n {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			<-start
			shards[g] = shardOfGoroutine()
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()
	for _, s := range shards {
		if s >= stageShards {
			t.Fatalf("shardOfGoroutine() = %d, want < %d", s, stageShards)
		}
	}
	return shards
}
