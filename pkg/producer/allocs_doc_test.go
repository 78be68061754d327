package producer_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
)

// TestSendSyncAllocsAsDocumented holds what the READMEs say BenchmarkSendSync
// allocates to what its sub-benchmarks' code allocates, measured here on the
// benchmarks' own producer (benchProducer): the allocs/op and B/op columns of
// this package's README ("Cost") and the allocations the root README's
// Performance table gives for BenchmarkSendSync/ok. ok/parallel runs ok's code
// on several goroutines; it is measured on one.
func TestSendSyncAllocsAsDocumented(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures allocations (not under -race, whose sync.Pool drops what is put back)")
	}
	ctx, m := context.Background(), msg()
	send := func(clock clock.Clock) func() {
		p, _ := benchProducer(t, noop, clock)
		return func() {
			if _, err := p.SendSync(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, strat := benchProducer(t, noop, clock.Real{})
	info, err := p.PublishInfo(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	measured := map[string]cost{
		"SendSync/ok":              measure(send(clock.Real{})),
		"SendSync/ok/manual-clock": measure(send(clock.NewManual(time.Unix(0, 0)))),
		"SendSync/ok/parallel":     measure(send(clock.Real{})),
		"SendSync/pick+update": measure(func() {
			start := time.Now()
			pick, _ := strat.Select(info, latency.PickInfo{})
			strat.Update(pick.Queue.BrokerName, time.Since(start), false, true)
		}),
	}

	readme := readFile(t, "README.md")
	rows := 0
	for _, line := range strings.Split(readme, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if !strings.HasPrefix(line, "| SendSync/") || len(cells) != 4 {
			continue
		}
		name := strings.Fields(cells[0])[0]
		want, ok := measured[name]
		if !ok {
			t.Errorf("pkg/producer/README.md: a row for %s, which BenchmarkSendSync does not have", name)
			continue
		}
		rows++
		bytes, errB := strconv.ParseUint(strings.TrimSpace(cells[2]), 10, 64)
		allocs, errA := strconv.ParseUint(strings.TrimSpace(cells[3]), 10, 64)
		if errB != nil || errA != nil {
			t.Errorf("pkg/producer/README.md: %s: B/op %q and allocs/op %q are not numbers", name, cells[2], cells[3])
			continue
		}
		if bytes != want.bytes || allocs != want.allocs {
			t.Errorf("pkg/producer/README.md says %s allocates %d B in %d allocations per send; it allocates %d B in %d", name, bytes, allocs, want.bytes, want.allocs)
		}
	}
	if rows != len(measured) {
		t.Errorf("pkg/producer/README.md's Cost table has %d SendSync rows, want one for each of %d sub-benchmarks", rows, len(measured))
	}

	root := readFile(t, filepath.Join("..", "..", "README.md"))
	row := regexp.MustCompile("(?m)^\\| `pkg/producer` `BenchmarkSendSync/ok`.*\\| ([0-9]+) allocations? \\|$").FindStringSubmatch(root)
	if row == nil {
		t.Fatal("README.md's Performance table has no row `pkg/producer` `BenchmarkSendSync/ok` ending in \"| N allocations |\"")
	}
	if n, _ := strconv.ParseUint(row[1], 10, 64); n != measured["SendSync/ok"].allocs {
		t.Errorf("README.md says BenchmarkSendSync/ok makes %d allocations per send; it makes %d", n, measured["SendSync/ok"].allocs)
	}
}

// cost is what one call allocates, on average.
type cost struct{ bytes, allocs uint64 }

// measure runs f as testing.AllocsPerRun does (warmed up, on one P) and returns
// the bytes and allocations of one call, on average.
func measure(f func()) cost {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const runs = 1000
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return cost{bytes: (after.TotalAlloc - before.TotalAlloc) / runs, allocs: (after.Mallocs - before.Mallocs) / runs}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
