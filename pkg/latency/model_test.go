package latency_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

// This file checks the strategy against itself and against a model.
//
// Each run drives three selectors through the same random sequence of route
// changes, fault updates, clock moves, switch flips and picks:
//  1. a Strategy as it runs (route flag summaries, the kept least-bad order);
//  2. a Strategy that walks probe by probe and sorts the table on every
//     least-bad pick (latency.WalkOnly), over a table of its own;
//  3. model, a plain transcription of DESIGN.md's words about the
//     reference's cascade, written without looking at the implementation.
// Every pick's queue and stage, the route index after it, and the fault
// items must agree exactly.

// scriptedRandom answers Int32n with a value the test sets before a pick.
type scriptedRandom struct{ next atomic.Int32 }

func (r *scriptedRandom) Int32() int32       { return 0 }
func (r *scriptedRandom) Int32n(int32) int32 { return r.next.Load() }

type modelItem struct {
	latency   time.Duration
	until     int64 // Unix nanoseconds; 0 when never isolated
	reachable bool
}

// model is the reference's selector as DESIGN.md (section 2) and TRACE.md
// ("State") describe it.
type model struct {
	v4        bool
	faultOn   bool
	filter    func(route.MessageQueue) bool // user filter; nil for none
	queues    []route.MessageQueue
	writeNums map[string]int // first writable queue data of a broker, sorted by name
	index     int32
	worst     int32
	now       int64
	items     map[string]*modelItem
}

const mask = 0x7FFFFFFF

// next is the Java index's incrementAndGet: store v+1 (wrapping), return it
// with the sign bit cleared.
func (m *model) next() int32 {
	m.index++ // Go's int32 arithmetic wraps as Java's does
	return m.index & mask
}

// pos is one unfiltered pick's position: next() % n.
func (m *model) pos() int { return int(m.next() % int32(len(m.queues))) }

// pass is the filtered pick: up to n probes, each at abs(next() % n).
func (m *model) pass(admit func(q route.MessageQueue) bool) (int, bool) {
	for range len(m.queues) {
		p := int(m.next() % int32(len(m.queues))) // already non-negative
		if admit(m.queues[p]) {
			return p, true
		}
	}
	return 0, false
}

func (m *model) available(b string) bool {
	it, ok := m.items[b]
	return !ok || m.now >= it.until
}

func (m *model) reachable(b string) bool {
	it, ok := m.items[b]
	return !ok || it.reachable
}

func (m *model) userFilter(q route.MessageQueue) bool { return m.filter == nil || m.filter(q) }

// durations is the reference's table scanned from the top.
func (m *model) duration(lat time.Duration) time.Duration {
	latencyMax := []int64{50, 100, 550, 1800, 3000, 5000, 15000}
	notAvailable := []int64{0, 0, 2000, 5000, 6000, 10000, 30000}
	if m.v4 {
		latencyMax = []int64{50, 100, 550, 1000, 2000, 3000, 15000}
		notAvailable = []int64{0, 0, 30000, 60000, 120000, 180000, 600000}
	}
	for i := len(latencyMax) - 1; i >= 0; i-- {
		if lat >= time.Duration(latencyMax[i])*time.Millisecond {
			return time.Duration(notAvailable[i]) * time.Millisecond
		}
	}
	return 0
}

func (m *model) update(b string, lat time.Duration, isolation, reachable bool) {
	if !m.faultOn {
		return
	}
	lookup := lat
	if isolation {
		lookup = 10000 * time.Millisecond
		if m.v4 {
			lookup = 30000 * time.Millisecond
		}
	}
	d := m.duration(lookup)
	it, ok := m.items[b]
	if !ok {
		it = &modelItem{reachable: true}
		m.items[b] = it
	}
	it.latency = lat
	if m.v4 {
		it.until = m.now + int64(d)
		return
	}
	if d > 0 && m.now+int64(d) > it.until {
		it.until = m.now + int64(d)
	}
	it.reachable = reachable
}

// pickLeastBad is 4.x's pickOneAtLeast with ties broken by name.
func (m *model) pickLeastBad() (string, bool) {
	names := make([]string, 0, len(m.items))
	for b := range m.items {
		names = append(names, b)
	}
	if len(names) == 0 {
		return "", false
	}
	slices.SortFunc(names, func(x, y string) int {
		ax, ay := m.available(x), m.available(y)
		if ax != ay {
			if ax {
				return -1
			}
			return 1
		}
		ix, iy := m.items[x], m.items[y]
		if c := cmp.Compare(ix.latency, iy.latency); c != 0 {
			return c
		}
		if c := cmp.Compare(ix.until, iy.until); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	if len(names) == 1 {
		return names[0], true
	}
	m.worst++
	return names[int(m.worst&mask)%(len(names)/2)], true
}

// pick returns "broker:queue" or "null", and the stage.
func (m *model) pick(last string, reset bool, resetTo int32) (string, latency.Stage) {
	n := len(m.queues)
	if n == 0 {
		return "null", latency.StageNone
	}
	notLast := func(q route.MessageQueue) bool { return last == "" || q.BrokerName != last }
	at := func(p int, s latency.Stage) (string, latency.Stage) { return m.queues[p].String(), s }
	if !m.v4 {
		if m.faultOn {
			if reset {
				m.index = resetTo // abs of a value in [0, MaxInt32)
			}
			if p, ok := m.pass(func(q route.MessageQueue) bool {
				return m.available(q.BrokerName) && notLast(q) && m.userFilter(q)
			}); ok {
				return at(p, latency.StageAvailable)
			}
			if p, ok := m.pass(func(q route.MessageQueue) bool {
				return m.reachable(q.BrokerName) && notLast(q) && m.userFilter(q)
			}); ok {
				return at(p, latency.StageReachable)
			}
		} else if p, ok := m.pass(func(q route.MessageQueue) bool { return notLast(q) && m.userFilter(q) }); ok {
			return at(p, latency.StageNotLast)
		}
		if m.filter != nil {
			if p, ok := m.pass(m.filter); ok {
				return at(p, latency.StageFiltered)
			}
		}
		return at(m.pos(), latency.StageAny)
	}

	if !m.faultOn {
		if m.filter != nil {
			if p, ok := m.pass(func(q route.MessageQueue) bool { return notLast(q) && m.filter(q) }); ok {
				return at(p, latency.StageNotLast)
			}
			if p, ok := m.pass(m.filter); ok {
				return at(p, latency.StageFiltered)
			}
		}
		if last == "" {
			return at(m.pos(), latency.StageNotLast)
		}
		for range n {
			if p := m.pos(); m.queues[p].BrokerName != last {
				return at(p, latency.StageNotLast)
			}
		}
		return at(m.pos(), latency.StageAny)
	}
	c := m.next()
	for i := range n {
		v := c + int32(i)
		if v < 0 {
			v = -v // Java's Math.abs: MinInt32 stays negative
		}
		p := 0
		if v >= 0 {
			p = int(v) % n
		}
		if q := m.queues[p]; m.available(q.BrokerName) && m.userFilter(q) {
			return at(p, latency.StageAvailable)
		}
	}
	if m.filter != nil {
		if p, ok := m.pass(m.filter); ok {
			return at(p, latency.StageFiltered)
		}
	}
	broker, ok := m.pickLeastBad()
	nums := -1
	if n, known := m.writeNums[broker]; ok && known {
		nums = n
	}
	if nums > 0 {
		m.pos()
		return broker + ":" + itoa(int(m.next())%nums), latency.StageLeastBad
	}
	if ok {
		delete(m.items, broker)
	}
	return at(m.pos(), latency.StageAny)
}

// randomRoute makes route data and the model's view of it: queues sorted by
// broker name from writable brokers with a master, or an ordered conf.
func randomRoute(r *rand.Rand) (*route.TopicRouteData, []route.MessageQueue, map[string]int) {
	names := []string{"a", "b", "c", "d", "e"}
	data := &route.TopicRouteData{}
	type qdata struct {
		name     string
		nums     int
		writable bool
	}
	var qds []qdata
	masters := map[string]bool{}
	for _, b := range names {
		if r.IntN(5) == 0 {
			continue
		}
		q := qdata{b, r.IntN(4), r.IntN(6) != 0}
		qds = append(qds, q)
		perm := route.PermRead
		if q.writable {
			perm |= route.PermWrite
		}
		data.QueueDatas = append(data.QueueDatas, route.QueueData{BrokerName: b, WriteQueueNums: q.nums, ReadQueueNums: q.nums, Perm: perm})
		masters[b] = r.IntN(6) != 0
		addrs := map[int64]string{1: "slave-" + b}
		if masters[b] {
			addrs[route.MasterID] = "addr-" + b
		}
		data.BrokerDatas = append(data.BrokerDatas, route.BrokerData{BrokerName: b, BrokerAddrs: addrs})
	}
	r.Shuffle(len(data.QueueDatas), func(i, j int) { data.QueueDatas[i], data.QueueDatas[j] = data.QueueDatas[j], data.QueueDatas[i] })
	slices.SortFunc(qds, func(x, y qdata) int { return strings.Compare(x.name, y.name) })
	writeNums := map[string]int{}
	var queues []route.MessageQueue
	for _, q := range qds {
		if q.writable {
			writeNums[q.name] = q.nums
		}
		if q.writable && masters[q.name] {
			for i := range q.nums {
				queues = append(queues, route.MessageQueue{Topic: "T", BrokerName: q.name, QueueID: i})
			}
		}
	}
	if r.IntN(8) == 0 { // an ordered topic over the same brokers, in a random order
		var conf []string
		queues = nil
		for range 1 + r.IntN(4) {
			b, k := names[r.IntN(len(names))], 1+r.IntN(3)
			conf = append(conf, b+":"+itoa(k))
			for i := range k {
				queues = append(queues, route.MessageQueue{Topic: "T", BrokerName: b, QueueID: i})
			}
		}
		data.OrderTopicConf = route.Str(strings.Join(conf, ";"))
	}
	return data, queues, writeNums
}

var (
	modelLatencies = []int64{0, 1, 49, 50, 99, 100, 549, 550, 999, 1000, 1799, 1800, 2000, 2999, 3000, 5000, 14999, 15000, 40000}
	modelAdvances  = []int64{0, 0, 1, 1, 499, 1000, 1999, 2000, 5000, 6000, 30000, 60000, 600000}
	modelIndexes   = []int32{0, 1, -1, math.MaxInt32, math.MaxInt32 - 1, math.MaxInt32 - 3, math.MinInt32, math.MinInt32 + 1}
)

func runModel(t *testing.T, v4, withFilter bool, seed uint64, steps int, stages map[latency.Stage]int) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	mode := latency.ModeV5
	if v4 {
		mode = latency.ModeV4
	}
	var filter func(route.MessageQueue) bool
	cfg := latency.Reference5()
	cfg.Mode = mode
	if withFilter {
		// Refuse odd queue ids and broker e: a per-queue filter.
		filter = func(q route.MessageQueue) bool { return q.QueueID%2 == 0 && q.BrokerName != "e" }
		cfg.Filters = []route.QueueFilter{route.QueueFilterFunc(filter)}
	}
	clk := clock.NewManual(t0)
	counter := latency.NewStageCounter()
	runStages := map[latency.Stage]uint64{}
	fast, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithStageCounter(counter))
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	shadowTable := latency.NewFaultTable(mode, clk)
	walking, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithFaultTable(shadowTable))
	if err != nil {
		t.Fatal(err)
	}
	defer walking.Close()
	latency.WalkOnly(walking)
	if walking.Table() != shadowTable {
		t.Fatal("Table() is not the table given")
	}
	if fast.StageCounter() != counter || walking.StageCounter() != nil {
		t.Fatal("StageCounter() does not return the counter given")
	}
	defer func() {
		// The fast strategy counted every pick at the stage that answered.
		for _, st := range latency.Stages() {
			if got := counter.Count(st); got != runStages[st] {
				t.Errorf("seed %d: StageCounter.Count(%s) = %d, want %d", seed, st, got, runStages[st])
			}
		}
	}()
	m := &model{v4: v4, filter: filter, now: t0.UnixNano(), items: map[string]*modelItem{}}
	fast.Table().WorstIndex().Store(0) // it starts at a random value
	shadowTable.WorstIndex().Store(0)
	srcFast, srcWalking := &scriptedRandom{}, &scriptedRandom{}
	var infoFast, infoWalking *route.PublishInfo
	var log []string // the operations so far, printed on a mismatch

	newRoute := func() {
		data, queues, writeNums := randomRoute(r)
		var err error
		if infoFast, err = route.NewPublishInfo("T", data, route.WithRandom(srcFast)); err != nil {
			t.Fatal(err)
		}
		if infoWalking, err = route.NewPublishInfo("T", data, route.WithRandom(srcWalking)); err != nil {
			t.Fatal(err)
		}
		m.queues, m.writeNums = queues, writeNums
		idx := modelIndexes[r.IntN(len(modelIndexes))]
		infoFast.Index().Store(idx)
		infoWalking.Index().Store(idx)
		m.index = idx
		log = append(log, fmt.Sprintf("route %s index %d", queueNames(queues), idx))
		if got := queueNames(infoFast.Queues()); got != queueNames(queues) {
			t.Fatalf("NewPublishInfo() = %s, model says %s", got, queueNames(queues))
		}
	}
	newRoute()
	fail := func(format string, args ...any) {
		t.Helper()
		tail := log
		if len(tail) > 40 {
			tail = tail[len(tail)-40:]
		}
		t.Fatalf("seed %d step %d: %s\nlast operations:\n  %s", seed, len(log), fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
	}
	brokers := []string{"a", "b", "c", "d", "e", "x"}

	for range steps {
		switch op := r.IntN(100); {
		case op < 3:
			newRoute()
		case op < 6:
			on := r.IntN(3) != 0
			fast.SetFaultTolerance(on)
			walking.SetFaultTolerance(on)
			m.faultOn = on
			log = append(log, fmt.Sprintf("enable %t", on))
		case op < 30:
			b := brokers[r.IntN(len(brokers))]
			lat := time.Duration(modelLatencies[r.IntN(len(modelLatencies))]) * time.Millisecond
			iso, reach := r.IntN(4) == 0, r.IntN(3) != 0
			fast.Update(b, lat, iso, reach)
			walking.Update(b, lat, iso, reach)
			m.update(b, lat, iso, reach)
			log = append(log, fmt.Sprintf("update %s %d %t %t", b, lat.Milliseconds(), iso, reach))
		case op < 40:
			d := time.Duration(modelAdvances[r.IntN(len(modelAdvances))]) * time.Millisecond
			clk.Advance(d)
			m.now += int64(d)
			log = append(log, fmt.Sprintf("advance %d", d.Milliseconds()))
		case op < 43:
			b := brokers[r.IntN(len(brokers))]
			fast.Table().Remove(b)
			shadowTable.Remove(b)
			delete(m.items, b)
			log = append(log, "remove "+b)
		case op < 46:
			idx := modelIndexes[r.IntN(len(modelIndexes))]
			if r.IntN(2) == 0 {
				idx = int32(r.Uint32())
			}
			infoFast.Index().Store(idx)
			infoWalking.Index().Store(idx)
			m.index = idx
			log = append(log, fmt.Sprintf("index %d", idx))
		case op < 48:
			w := modelIndexes[r.IntN(len(modelIndexes))]
			fast.Table().WorstIndex().Store(w)
			shadowTable.WorstIndex().Store(w)
			m.worst = w
			log = append(log, fmt.Sprintf("worst %d", w))
		default:
			last := ""
			if r.IntN(2) == 0 {
				last = brokers[r.IntN(len(brokers))]
			}
			reset := r.IntN(4) == 0
			resetTo := int32(r.IntN(math.MaxInt32))
			if r.IntN(3) == 0 {
				resetTo = math.MaxInt32 - 1 - int32(r.IntN(4))
			}
			srcFast.next.Store(resetTo)
			srcWalking.next.Store(resetTo)
			in := latency.PickInfo{LastBroker: last, ResetIndex: reset}
			log = append(log, fmt.Sprintf("select %q reset=%t(%d)", last, reset, resetTo))
			pf, okf := fast.Select(infoFast, in)
			pg, okg := walking.Select(infoWalking, in)
			want, wantStage := m.pick(last, reset, resetTo)
			got := func(p latency.Pick, ok bool) string {
				if !ok {
					return "null"
				}
				return p.Queue.String()
			}
			if got(pf, okf) != want || pf.Stage != wantStage {
				fail("fast Select(%+v) = %s (%s), model says %s (%s)", in, got(pf, okf), pf.Stage, want, wantStage)
			}
			if got(pg, okg) != want || pg.Stage != wantStage {
				fail("walking Select(%+v) = %s (%s), model says %s (%s)", in, got(pg, okg), pg.Stage, want, wantStage)
			}
			stages[wantStage]++
			runStages[wantStage]++
			if infoFast.Index().Load() != m.index || infoWalking.Index().Load() != m.index {
				fail("index after Select(%+v) = %d (fast), %d (walking), model says %d", in, infoFast.Index().Load(), infoWalking.Index().Load(), m.index)
			}
		}
		checkItems(t, fail, fast.Table(), shadowTable, m)
	}
}

func checkItems(t *testing.T, fail func(string, ...any), fast, shadow *latency.FaultTable, m *model) {
	t.Helper()
	for name, table := range map[string]*latency.FaultTable{"fast": fast, "walking": shadow} {
		items := table.Items()
		ok := len(items) == len(m.items)
		for _, it := range items {
			want, known := m.items[it.Broker]
			if !known || it.Latency != want.latency || it.IsolatedUntil.UnixNano() != want.until ||
				it.Reachable != (want.reachable || m.v4) || it.Available != m.available(it.Broker) {
				ok = false
			}
		}
		if !ok {
			var want []string
			for b, it := range m.items {
				want = append(want, fmt.Sprintf("%s lat=%v until=%d reach=%t avail=%t", b, it.latency, it.until, it.reachable || m.v4, m.available(b)))
			}
			slices.Sort(want)
			fail("%s Items() = %+v, model says %v", name, items, want)
		}
	}
	if fast.WorstIndex().Load() != m.worst || shadow.WorstIndex().Load() != m.worst {
		fail("worst index = %d, %d, model says %d", fast.WorstIndex().Load(), shadow.WorstIndex().Load(), m.worst)
	}
}

// TestStrategyAgainstModel runs random operation sequences through the fast
// path, the walking path and the model; see the top of this file.
func TestStrategyAgainstModel(t *testing.T) {
	seeds, steps := 40, 600
	if testing.Short() || raceEnabled {
		seeds = 8
	}
	for _, v4 := range []bool{false, true} {
		for _, withFilter := range []bool{false, true} {
			name := fmt.Sprintf("v4=%t/filter=%t", v4, withFilter)
			t.Run(name, func(t *testing.T) {
				stages := map[latency.Stage]int{}
				for seed := range uint64(seeds) {
					runModel(t, v4, withFilter, seed, steps, stages)
				}
				// The random runs must reach every stage the mode has.
				want := []latency.Stage{latency.StageNone, latency.StageAvailable, latency.StageNotLast, latency.StageAny}
				if v4 {
					want = append(want, latency.StageLeastBad)
				} else {
					want = append(want, latency.StageReachable)
				}
				if withFilter {
					want = append(want, latency.StageFiltered)
				}
				for _, st := range want {
					if stages[st] == 0 {
						t.Errorf("no pick answered at stage %s: %v", st, stages)
					}
				}
				t.Logf("picks by stage: %v", stages)
			})
		}
	}
}

// TestStrategyConcurrent runs picks, updates, removals, switch flips, route
// swaps, clock moves (expiry timers and detector ticks) and detector rounds
// at once; under -race it checks the strategy's concurrency contract. Every
// pick must still come from the route it was asked about.
func TestStrategyConcurrent(t *testing.T) {
	tests := []struct {
		name   string
		mode   latency.Mode
		hidden bool
	}{
		{"v5", latency.ModeV5, false},
		{"v5 walking", latency.ModeV5, true},
		{"v4", latency.ModeV4, false},
		{"v4 walking", latency.ModeV4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(t0)
			cfg := latency.Reference5()
			cfg.Mode = tt.mode
			cfg.FaultTolerance = true
			cfg.DetectParallel = 3
			cfg.Filters = []route.QueueFilter{route.QueueFilterFunc(func(q route.MessageQueue) bool { return q.QueueID != 1 })}
			opts := []latency.Option{latency.WithClock(clk), latency.WithLogger(discardLog)}
			if tt.hidden {
				opts = append(opts, latency.WithFaultTable(latency.NewFaultTable(tt.mode, clk)))
			}
			if tt.mode == latency.ModeV5 && !tt.hidden {
				cfg.Detector = true
				opts = append(opts,
					latency.WithResolver(probe.ResolverFunc(func(b string) (string, bool) { return "addr-" + b, b != "e" })),
					latency.WithServiceDetector(probe.ServiceDetectorFunc(func(_ context.Context, addr string) error {
						if addr == "addr-a" {
							return nil
						}
						return errRefused
					})))
			}
			s, err := latency.NewStrategy(cfg, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if tt.hidden {
				latency.WalkOnly(s)
			}
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			var info atomic.Pointer[route.PublishInfo]
			swap := func(r *rand.Rand) {
				data, _, _ := randomRoute(r)
				p, err := route.NewPublishInfo("T", data)
				if err != nil {
					t.Error(err)
					return
				}
				info.Store(p)
			}
			swap(rand.New(rand.NewPCG(1, 1)))

			const rounds = 300
			var wg sync.WaitGroup
			worker := func(seed uint64, f func(r *rand.Rand)) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(seed, 7))
					for range rounds {
						f(r)
					}
				}()
			}
			brokers := []string{"a", "b", "c", "d", "e"}
			for g := range 4 {
				worker(uint64(g), func(r *rand.Rand) {
					p := info.Load()
					in := latency.PickInfo{ResetIndex: r.IntN(3) == 0}
					if r.IntN(2) == 0 {
						in.LastBroker = brokers[r.IntN(len(brokers))]
					}
					pick, ok := s.Select(p, in)
					if ok != p.OK() {
						t.Errorf("Select() ok = %t on a route of %d queues", ok, p.Len())
						return
					}
					if ok && pick.Stage != latency.StageLeastBad && !slices.Contains(p.Queues(), *pick.Queue) {
						t.Errorf("Select() = %v, not a queue of the route %s", pick.Queue, queueNames(p.Queues()))
					}
				})
			}
			worker(10, func(r *rand.Rand) {
				s.Update(brokers[r.IntN(len(brokers))], time.Duration(modelLatencies[r.IntN(len(modelLatencies))])*time.Millisecond, r.IntN(3) == 0, r.IntN(2) == 0)
			})
			worker(11, func(r *rand.Rand) {
				clk.Advance(time.Duration(r.IntN(4000)) * time.Millisecond)
			})
			worker(12, func(r *rand.Rand) {
				switch r.IntN(8) {
				case 0:
					s.Table().Remove(brokers[r.IntN(len(brokers))])
				case 1:
					if tb := s.Table(); tb != nil {
						tb.Retain(func(b string) bool { return b != "d" })
					}
				case 2:
					s.SetFaultTolerance(r.IntN(4) != 0)
				case 3:
					s.SetDetector(r.IntN(2) == 0)
				case 4:
					s.SetDurations(latency.V4Durations())
				case 5:
					swap(r)
				case 6:
					s.DetectRound(context.Background())
				default:
					s.Table().Items()
					s.Table().IsReachable("a")
				}
			})
			wg.Wait()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
