package latency

import "sync/atomic"

// stageShards spreads a StageCounter over cache lines so goroutines picking
// different queues do not contend on one counter.
const stageShards = 8

// StageCounter counts picks by the cascade stage that answered them. Adding
// is one atomic add on a cache line chosen by the picked queue; reading sums
// the shards. It is safe for concurrent use; the zero value is ready.
type StageCounter struct {
	shards [stageShards]stageShard
}

type stageShard struct {
	n [numStages]atomic.Uint64
	_ [128 - (int(numStages)*8)%128]byte // two lines: the adjacent-line prefetcher pairs them
}

// NewStageCounter returns an empty counter.
func NewStageCounter() *StageCounter { return &StageCounter{} }

func (c *StageCounter) add(st Stage, hint int) {
	c.shards[hint&(stageShards-1)].n[st].Add(1)
}

// Count returns how many picks stage st answered.
func (c *StageCounter) Count(st Stage) uint64 {
	if st >= numStages {
		return 0
	}
	var sum uint64
	for i := range c.shards {
		sum += c.shards[i].n[st].Load()
	}
	return sum
}

// Counts returns the count of every stage that can answer a pick.
func (c *StageCounter) Counts() map[Stage]uint64 {
	out := make(map[Stage]uint64, numStages)
	for _, st := range Stages() {
		out[st] = c.Count(st)
	}
	return out
}
