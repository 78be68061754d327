package latency

import (
	"sync/atomic"
	"unsafe"
)

// stageShards spreads a StageCounter over cache lines.
const (
	stageShardBits = 5
	stageShards    = 1 << stageShardBits
)

// StageCounter counts picks by the cascade stage that answered them. It is
// safe for concurrent use; the zero value is ready.
type StageCounter struct {
	// Adding is one atomic add on a shard picked by the calling goroutine's
	// stack, so goroutines picking at once on different cores each keep
	// adding to their own cache line instead of passing one line between
	// cores; reading sums the shards.
	shards [stageShards]stageShard
}

type stageShard struct {
	n [numStages]atomic.Uint64
	_ [128 - (int(numStages)*8)%128]byte // two lines: the adjacent-line prefetcher pairs them
}

// NewStageCounter returns an empty counter.
func NewStageCounter() *StageCounter { return &StageCounter{} }

func (c *StageCounter) add(st Stage) {
	c.shards[shardOfGoroutine()].n[st].Add(1)
}

// shardOfGoroutine hashes the address of a variable on the caller's stack:
// it is the same for every pick a goroutine makes at about the same depth,
// and differs between goroutines, which run on stacks of their own (2 KiB
// apart at the least, hence the shift by 11). A goroutine whose stack moves
// (it grew) simply counts on another shard from then on. Go offers no
// cheaper handle on the running CPU or goroutine.
func shardOfGoroutine() uint64 {
	var here byte
	x := uint64(uintptr(unsafe.Pointer(&here))) >> 11
	// Fibonacci hashing: neighbouring stacks land far apart.
	return (x * 0x9E3779B97F4A7C15) >> (64 - stageShardBits)
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
