package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// heapPeak records the largest heap in use (runtime.MemStats.HeapInuse)
// above the heap in use after a collection when it started. It samples
// wherever the run meets it (each read of the trace, each write of its
// output), so what it finds does not depend on timing.
type heapPeak struct {
	base, peak uint64
	samples    int
}

func newHeapPeak() *heapPeak {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &heapPeak{base: ms.HeapInuse}
}

func (h *heapPeak) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.samples++
	if ms.HeapInuse > h.base && ms.HeapInuse-h.base > h.peak {
		h.peak = ms.HeapInuse - h.base
	}
}

// repeatReader reads block again and again, n times, sampling the heap on
// every read: a trace as large as wanted that takes no memory itself.
type repeatReader struct {
	block []byte
	n     int // blocks left, the current one included
	off   int
	heap  *heapPeak
}

func (r *repeatReader) Read(p []byte) (int, error) {
	r.heap.sample()
	k := 0
	for k < len(p) && r.n > 0 {
		c := copy(p[k:], r.block[r.off:])
		k += c
		if r.off += c; r.off == len(r.block) {
			r.off = 0
			r.n--
		}
	}
	if k == 0 {
		return 0, io.EOF
	}
	return k, nil
}

// sampleWriter counts the output's lines, sampling the heap on every write.
type sampleWriter struct {
	lines int
	heap  *heapPeak
}

func (w *sampleWriter) Write(p []byte) (int, error) {
	w.heap.sample()
	w.lines += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

// TestRunStreams checks that Run holds no more of a trace than the line it
// runs: a 64 MiB trace (the same block of operations and a long comment,
// over and over) runs to the end with the heap growing by less than 16 MiB,
// where reading the whole trace first takes more than 64 MiB.
func TestRunStreams(t *testing.T) {
	block := []byte(`clock 1000000
route a:4,b:4,c:4
index 7
enable true
update a 600 false
select -
resetrand 3 5
select a reset
select b reset
tpselect a
items
# ` + strings.Repeat("x", 8<<10) + "\n")
	blocks := (64 << 20) / len(block)
	var one bytes.Buffer
	if err := Run(bytes.NewReader(block), &one, latency.ModeV5); err != nil {
		t.Fatalf("Run(one block) error = %v", err)
	}
	perBlock := bytes.Count(one.Bytes(), []byte("\n"))

	heap := newHeapPeak()
	out := &sampleWriter{heap: heap}
	if err := Run(&repeatReader{block: block, n: blocks, heap: heap}, out, latency.ModeV5); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if want := blocks * perBlock; out.lines != want {
		t.Fatalf("Run() printed %d lines, want %d (%d blocks of %d)", out.lines, want, blocks, perBlock)
	}
	const limit = 16 << 20
	t.Logf("%d MiB trace: heap in use grew by at most %.1f MiB (%d samples)", blocks*len(block)>>20, float64(heap.peak)/(1<<20), heap.samples)
	if heap.peak > limit {
		t.Errorf("running a %d MiB trace grew the heap in use by %.1f MiB, want at most %d MiB: the trace is held, not streamed",
			blocks*len(block)>>20, float64(heap.peak)/(1<<20), limit>>20)
	}
}

// TestRunRouteMemory checks that the largest command a trace may hold, a
// route of 2^20 queues, costs a bounded heap however often it comes: four
// such routes, each picked from, run with the heap growing by at most
// 96 MiB. The route's queues are 40 MiB; printing them must take no copy of
// them, nor text of the whole line, and the route before must be let go.
func TestRunRouteMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds routes of a million queues")
	}
	parts := make([]string, 16)
	for i := range parts {
		parts[i] = fmt.Sprintf("broker%02d:65536", i)
	}
	block := []byte("route " + strings.Join(parts, ",") + "\nindex 0\nselect -\n")
	heap := newHeapPeak()
	out := &sampleWriter{heap: heap}
	if err := Run(&repeatReader{block: block, n: 4, heap: heap}, out, latency.ModeV5); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if out.lines != 8 {
		t.Fatalf("Run() printed %d lines, want 8", out.lines)
	}
	const limit = 96 << 20
	t.Logf("4 routes of 2^20 queues: heap in use grew by at most %.1f MiB (%d samples)", float64(heap.peak)/(1<<20), heap.samples)
	if heap.peak > limit {
		t.Errorf("4 routes of 2^20 queues grew the heap in use by %.1f MiB, want at most %d MiB", float64(heap.peak)/(1<<20), limit>>20)
	}
}

// TestRunPrintsAsItReads checks that Run's output keeps up with its input:
// a line's output is written before Run waits for the next line, so a trace
// typed at a terminal, or fed through a pipe, answers line by line.
func TestRunPrintsAsItReads(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := Run(inR, outW, latency.ModeV5)
		outW.CloseWithError(err)
		done <- err
	}()
	lines := bufio.NewReader(outR)
	// Each line is written only once the one before has been answered: if
	// Run held its output back until it read more, this would wait for ever.
	// The guard below ends such a wait as a failure; it is not a measure of
	// speed.
	answered := make(chan error, 1)
	go func() {
		for i, want := range []string{"route -> [a:0 a:1]", "one", "index = 3"} {
			in := []string{"route a:2\n", "echo one\n", "index 3\ndumpindex\n"}[i]
			if _, err := io.WriteString(inW, in); err != nil {
				answered <- err
				return
			}
			got, err := lines.ReadString('\n')
			if err != nil || got != want+"\n" {
				answered <- fmt.Errorf("after %q: read %q, %v; want %q", in, got, err, want+"\n")
				return
			}
		}
		answered <- inW.Close()
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		inW.CloseWithError(errors.New("gave up"))
		t.Fatal("Run did not write a line's output before reading the next line")
	}
	if err := <-done; err != nil {
		t.Errorf("Run() error = %v", err)
	}
}

// TestRunStopsOnAWriteError checks that output that cannot be written stops
// the trace with the writer's error, not a line's.
func TestRunStopsOnAWriteError(t *testing.T) {
	errFull := errors.New("no space left on device")
	src := strings.Repeat("echo line\n", 100000)
	err := Run(strings.NewReader(src), failingWriter{errFull}, latency.ModeV4)
	var le *LineError
	if !errors.Is(err, errFull) || errors.As(err, &le) {
		t.Errorf("Run() error = %v, want %v alone", err, errFull)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
