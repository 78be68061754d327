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
// about once in thirty rounds. Every round's goroutines stay alive until
// the test ends, so no round reuses another's stacks: rounds that ran on
// the same eight recycled stacks would all land on the same shards, and
// the median would be one draw, not eleven.
func TestStageShardsSpread(t *testing.T) {
	const goroutines, rounds = 8, 11
	hold := make(chan struct{})
	var held sync.WaitGroup
	defer func() {
		close(hold)
		held.Wait()
	}()
	var counts []int
	for range rounds {
		shards := spreadRound(t, goroutines, hold, &held)
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
// between them), and returns the shard each counted on. They stay alive
// until hold is closed, each done on held.
func spreadRound(t *testing.T, n int, hold <-chan struct{}, held *sync.WaitGroup) []uint64 {
	var wg, ready sync.WaitGroup
	start := make(chan struct{})
	shards := make([]uint64, n)
	for g := range n {
		wg.Add(1)
		ready.Add(1)
		held.Add(1)
		go func() {
			defer held.Done()
			ready.Done()
			<-start
			shards[g] = shardOfGoroutine()
			wg.Done()
			<-hold
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
