package latency

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mqfault/mqfault/pkg/route"
)

// TestFastPosition checks that the cursor's position without a division is
// route.Position's, for route sizes from 2 to 1,000 and a few large ones, at
// the index's edges (0, 1, the wrap at 2^31, negative values) and at random
// index values; sizes below 2 have no constant (the cursor divides).
func TestFastPosition(t *testing.T) {
	for _, n := range []int{0, 1} {
		if m := positionConst(n); m != 0 {
			t.Errorf("positionConst(%d) = %d, want 0", n, m)
		}
	}
	sizes := []int{math.MaxInt32, math.MaxInt32 - 1, 1 << 30, 1<<30 + 3, 65537, 1 << 16}
	for n := 2; n <= 1000; n++ {
		sizes = append(sizes, n)
	}
	r := rand.New(rand.NewPCG(1, 2))
	edges := []int32{0, 1, 2, -1, -2, math.MaxInt32, math.MaxInt32 - 1, math.MinInt32, math.MinInt32 + 1}
	for _, n := range sizes {
		m := positionConst(n)
		if m == 0 {
			t.Fatalf("positionConst(%d) = 0", n)
		}
		vs := append([]int32(nil), edges...)
		for range 200 {
			vs = append(vs, int32(r.Uint32()))
		}
		for _, v := range vs {
			if got, want := fastPosition(v, m, n), route.Position(v, n); got != want {
				t.Fatalf("fastPosition(%d, n=%d) = %d, want %d (route.Position)", v, n, got, want)
			}
		}
	}
}
