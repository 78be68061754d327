package route_test

import (
	"math"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/route"
)

func TestIndexNext(t *testing.T) {
	tests := []struct {
		name       string
		start      int32
		wantNext   []int32 // what successive Next calls return
		wantStored int32   // the stored value afterwards
	}{
		{"from zero", 0, []int32{1, 2, 3}, 3},
		{"wraps at MaxInt32", math.MaxInt32 - 1, []int32{math.MaxInt32, 0, 1}, math.MinInt32 + 1},
		{"negative values are masked", -3, []int32{math.MaxInt32 - 1, math.MaxInt32, 0}, 0},
		{"from MinInt32", math.MinInt32, []int32{1, 2}, math.MinInt32 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			src := mocks.NewMockRandomSource(ctrl)
			src.EXPECT().Int32().Return(tt.start).Times(1)
			x := route.NewIndex(src)
			if got := x.Load(); got != tt.start {
				t.Fatalf("Load() = %d, want %d (the random start)", got, tt.start)
			}
			for i, want := range tt.wantNext {
				if got := x.Next(); got != want {
					t.Errorf("Next() #%d = %d, want %d", i+1, got, want)
				}
			}
			if got := x.Load(); got != tt.wantStored {
				t.Errorf("Load() = %d, want %d", got, tt.wantStored)
			}
		})
	}
}

func TestIndexAddStore(t *testing.T) {
	x := route.NewIndex(nil)
	x.Store(math.MaxInt32 - 1)
	if got := x.Add(3); got != math.MinInt32+1 {
		t.Errorf("Add(3) = %d, want %d (wrapped)", got, int32(math.MinInt32+1))
	}
	// k calls of Next equal one Add(k) on the stored value.
	a, b := route.NewIndex(nil), route.NewIndex(nil)
	a.Store(math.MaxInt32 - 5)
	b.Store(math.MaxInt32 - 5)
	for range 9 {
		a.Next()
	}
	b.Add(9)
	if a.Load() != b.Load() {
		t.Errorf("9 x Next() stores %d, Add(9) stores %d, want equal", a.Load(), b.Load())
	}
}

func TestIndexReset(t *testing.T) {
	tests := []struct {
		name  string
		drawn int32
		want  int32
	}{
		{"positive", 12345, 12345},
		{"zero", 0, 0},
		{"largest", math.MaxInt32 - 1, math.MaxInt32 - 1},
		// Int32n never returns these, but Reset must store abs of whatever
		// a source gives, as Java's Math.abs does.
		{"negative", -7, 7},
		{"MinInt32 stays MinInt32 as Java's Math.abs", math.MinInt32, math.MinInt32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := drawingIndex(t, tt.drawn)
			x.Reset()
			if got := x.Load(); got != tt.want {
				t.Errorf("Reset() stored %d, want %d", got, tt.want)
			}
		})
		t.Run(tt.name+"/draw", func(t *testing.T) {
			x := drawingIndex(t, tt.drawn)
			if got := x.Draw(); got != tt.want {
				t.Errorf("Draw() = %d, want %d (what Reset would store)", got, tt.want)
			}
			if got := x.Load(); got != 99 {
				t.Errorf("after Draw() the index holds %d, want 99: Draw stores nothing", got)
			}
		})
	}
}

func TestAbs32(t *testing.T) {
	tests := []struct{ in, want int32 }{
		{0, 0}, {5, 5}, {-5, 5}, {math.MaxInt32, math.MaxInt32}, {-math.MaxInt32, math.MaxInt32}, {math.MinInt32, math.MinInt32},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(int(tt.in)), func(t *testing.T) {
			if got := route.Abs32(tt.in); got != tt.want {
				t.Errorf("Abs32(%d) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

// javaFilteredPosition is the reference's abs(next() % n) with next() the
// masked stored value, in Java's int arithmetic.
func javaFilteredPosition(stored int32, n int) int {
	next := stored & route.PositiveMask
	r := next % int32(n) // Java % keeps the dividend's sign
	if r < 0 {
		r = -r
	}
	return int(r)
}

func TestPosition(t *testing.T) {
	tests := []struct {
		stored int32
		n      int
		want   int
	}{
		{0, 3, 0},
		{4, 3, 1},
		{math.MaxInt32, 3, 1},
		{math.MinInt32, 3, 0},
		{math.MinInt32 + 1, 3, 1},
		{-1, 3, 1}, // masked: MaxInt32
		{-2, 7, int((math.MaxInt32 - 1) % 7)},
		{123456789, 1, 0},
		{math.MaxInt32, 1 << 20, (math.MaxInt32) % (1 << 20)},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(int(tt.stored))+"/"+strconv.Itoa(tt.n), func(t *testing.T) {
			if got := route.Position(tt.stored, tt.n); got != tt.want {
				t.Errorf("Position(%d, %d) = %d, want %d", tt.stored, tt.n, got, tt.want)
			}
			if got := javaFilteredPosition(tt.stored, tt.n); got != tt.want {
				t.Errorf("abs(next() %% n) for %d, %d = %d, want %d", tt.stored, tt.n, got, tt.want)
			}
		})
	}
	// Exhaustively near the wrap points, Position equals the reference's
	// formula.
	for _, base := range []int32{math.MaxInt32 - 50, math.MinInt32, -50, 0} {
		for d := range int32(100) {
			v := base + d
			for _, n := range []int{1, 2, 3, 5, 7, 64, 1000} {
				if got, want := route.Position(v, n), javaFilteredPosition(v, n); got != want {
					t.Fatalf("Position(%d, %d) = %d, want %d", v, n, got, want)
				}
			}
		}
	}
}

func TestDefaultRandom(t *testing.T) {
	for range 1000 {
		if v := route.DefaultRandom.Int32n(10); v < 0 || v >= 10 {
			t.Fatalf("DefaultRandom.Int32n(10) = %d, want 0 <= v < 10", v)
		}
	}
	seen := map[int32]bool{}
	for range 64 {
		seen[route.DefaultRandom.Int32()] = true
	}
	if len(seen) < 2 {
		t.Errorf("DefaultRandom.Int32() returned %d distinct values in 64 draws, want a random spread", len(seen))
	}
}

// TestIndexConcurrent checks that concurrent Next calls lose no increment.
func TestIndexConcurrent(t *testing.T) {
	x := route.NewIndex(nil)
	x.Store(0)
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				x.Next()
			}
		}()
	}
	wg.Wait()
	if got := x.Load(); got != goroutines*each {
		t.Errorf("Load() after %d Next calls = %d", goroutines*each, got)
	}
}

// drawingIndex is an index whose source starts it at 99 and then draws
// drawn once (Reset's or Draw's draw).
func drawingIndex(t *testing.T, drawn int32) *route.Index {
	t.Helper()
	src := mocks.NewMockRandomSource(gomock.NewController(t))
	gomock.InOrder(
		src.EXPECT().Int32().Return(int32(99)),
		src.EXPECT().Int32n(int32(math.MaxInt32)).Return(drawn),
	)
	return route.NewIndex(src)
}
