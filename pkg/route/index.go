package route

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// PositiveMask clears the sign bit of an index value, as the reference does
// before using it (0x7FFFFFFF).
const PositiveMask = 0x7FFFFFFF

// RandomSource supplies the random values an Index draws. Implementations must
// be safe for concurrent use.
type RandomSource interface {
	// Int32 returns a random int32 of any sign (Java Random.nextInt()); a new
	// index starts from it.
	Int32() int32
	// Int32n returns a random value in [0, n) (Java Random.nextInt(n)); Reset
	// stores its absolute value.
	Int32n(n int32) int32
}

// DefaultRandom is the RandomSource used when none is given: math/rand/v2's
// goroutine-safe global generator.
var DefaultRandom RandomSource = globalRandom{}

type globalRandom struct{}

func (globalRandom) Int32() int32         { return int32(rand.Uint32()) }
func (globalRandom) Int32n(n int32) int32 { return rand.Int32N(n) }

// Index is the reference's round-robin index (Java ThreadLocalIndex) with the
// reference's arithmetic: a signed 32-bit value that wraps on overflow. Java
// keeps one per thread; mqfault keeps one per publish info, shared by
// goroutines through atomic operations, which is identical for one goroutine
// and spreads picks evenly for many.
//
// All methods are safe for concurrent use and never block.
type Index struct {
	v   atomic.Int32
	src RandomSource
}

// NewIndex returns an index that starts from src.Int32() (DefaultRandom when
// src is nil).
func NewIndex(src RandomSource) *Index {
	x := &Index{}
	x.init(src)
	return x
}

func (x *Index) init(src RandomSource) {
	if src == nil {
		src = DefaultRandom
	}
	x.src = src
	x.v.Store(src.Int32())
}

// Next stores the value plus one (wrapping: 2147483647 + 1 = -2147483648) and
// returns the stored value with its sign bit cleared (Java incrementAndGet).
func (x *Index) Next() int32 { return x.v.Add(1) & PositiveMask }

// Add adds delta (wrapping) and returns the stored value, sign bit included.
// A pick that probes k positions from one Add(1) publishes the rest of its
// movement with one Add(k-1): for a single goroutine that is exactly k calls
// of Next.
func (x *Index) Add(delta int32) int32 { return x.v.Add(delta) }

// Load returns the stored value, sign bit included.
func (x *Index) Load() int32 { return x.v.Load() }

// Store sets the stored value.
func (x *Index) Store(v int32) { x.v.Store(v) }

// Reset stores abs(r) for a fresh random r in [0, MaxInt32), as the
// reference's reset does when a send retries.
func (x *Index) Reset() { x.v.Store(x.Draw()) }

// Draw returns a value Reset would store, without storing it: a pick that
// starts from a random place of its own leaves the shared round robin
// where it is.
func (x *Index) Draw() int32 { return Abs32(x.src.Int32n(math.MaxInt32)) }

// Abs32 is Java's Math.abs on an int: abs(MinInt32) is MinInt32.
func Abs32(v int32) int32 {
	if v < 0 {
		return -v // wraps for MinInt32, as Java does
	}
	return v
}

// Position is the queue position a stored index value selects among n queues:
// (v & PositiveMask) % n, which equals the reference's abs(next() % n) and
// next() % n alike.
func Position(v int32, n int) int {
	return int(uint32(v&PositiveMask) % uint32(n))
}
