package latency

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/route"
)

// TestSeekAgainstWalk drives two strategies through the same random trace:
// one picks over the routes' flag summaries and the kept least-bad order
// (the fast path), the other walks probe by probe and sorts the table on
// every least-bad pick (walkOnly: the reference's own procedure). Routes are
// large and mostly isolated, with layouts where a broker's queues are spread
// out, queue counts that do not divide 2^31 (so the index's wrap sends a
// probe back to position 0 mid-pass) and index values next to the wrap.
// Every pick's queue and stage, the index after it, and the worst index must
// be equal.
func TestSeekAgainstWalk(t *testing.T) {
	seeds, steps := 60, 400
	if testing.Short() {
		seeds = 12
	}
	for _, tt := range []struct {
		name   string
		mode   Mode
		filter bool
		cap    bool
	}{
		{"v5", ModeV5, false, false},
		{"v5/filter", ModeV5, true, false},
		{"v5/cap", ModeV5, false, true},
		{"v5/cap/filter", ModeV5, true, true},
		{"v4", ModeV4, false, false},
		{"v4/filter", ModeV4, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stages := map[Stage]int{}
			for seed := range uint64(seeds) {
				runSeekTrace(t, tt.mode, tt.filter, tt.cap, seed, steps, stages)
			}
			t.Logf("picks by stage: %v", stages)
			want := []Stage{StageAvailable, StageAny}
			if tt.filter {
				want = append(want, StageFiltered)
			}
			if tt.mode == ModeV4 {
				want = append(want, StageLeastBad)
			} else {
				want = append(want, StageReachable)
			}
			for _, st := range want {
				if stages[st] == 0 {
					t.Errorf("no pick answered at stage %s: %v", st, stages)
				}
			}
		})
	}
}

// seekRoute makes a route of up to 40 brokers: grouped (a broker's queues
// together, as from a name server) or interleaved (as an ordered topic can
// be), with 1 to 5 queues each.
func seekRoute(r *rand.Rand) []route.MessageQueue {
	nb := 1 + r.IntN(40)
	var qs []route.MessageQueue
	for b := range nb {
		for q := range 1 + r.IntN(5) {
			qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: fmt.Sprintf("b%02d", b), QueueID: q})
		}
	}
	if r.IntN(2) == 0 {
		r.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	}
	return qs
}

func runSeekTrace(t *testing.T, mode Mode, filter, capOn bool, seed uint64, steps int, stages map[Stage]int) {
	r := rand.New(rand.NewPCG(seed, 0x5eec))
	clk := clock.NewManual(time.UnixMilli(1_000_000))
	cfg := Reference5()
	cfg.Mode = mode
	cfg.FaultTolerance = true
	if capOn {
		cfg.IsolationCap = &IsolationCapConfig{MaxFraction: []float64{0.25, 0.5, 0.75}[r.IntN(3)]}
	}
	refuseAll := false // some routes' filter admits nothing
	if filter {
		cfg.Filters = []route.QueueFilter{route.QueueFilterFunc(func(q route.MessageQueue) bool {
			return !refuseAll && q.QueueID != 1 && !strings.HasSuffix(q.BrokerName, "7")
		})}
	}
	strategies := make([]*Strategy, 2)
	for i := range strategies {
		s, err := NewStrategy(cfg, WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.table.worst.Store(0)
		strategies[i] = s
	}
	fast, walk := strategies[0], strategies[1]
	walk.walkOnly = true
	var infos [2]*route.PublishInfo
	var queues []route.MessageQueue
	brokers := func() []string { return infos[0].Brokers() }
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		tail := log
		if len(tail) > 30 {
			tail = tail[len(tail)-30:]
		}
		t.Fatalf("seed %d step %d: %s\nlast operations:\n  %s", seed, len(log), fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
	}
	setIndex := func() {
		v := []int32{0, -1, math.MaxInt32, math.MaxInt32 - 1, math.MaxInt32 - int32(r.IntN(200)), math.MinInt32, int32(r.Uint32())}[r.IntN(7)]
		for _, info := range infos {
			info.Index().Store(v)
		}
		log = append(log, fmt.Sprintf("index %d", v))
	}
	newRoute := func() {
		queues = seekRoute(r)
		refuseAll = r.IntN(5) == 0
		for i := range infos {
			info, err := route.NewPublishInfoFromQueues("T", queues)
			if err != nil {
				t.Fatal(err)
			}
			infos[i] = info
		}
		log = append(log, fmt.Sprintf("route of %d queues on %d brokers", len(queues), len(infos[0].Brokers())))
		setIndex()
		// Most of the route isolated, in a block or scattered.
		bs := brokers()
		frac := []float64{0, 0.5, 0.9, 1, 1}[r.IntN(5)]
		for i, b := range bs {
			if r.Float64() < frac || (r.IntN(2) == 0 && i < int(frac*float64(len(bs)))) {
				update(strategies, b, time.Duration(r.IntN(3000))*time.Millisecond, true, r.IntN(2) == 0)
			}
		}
	}
	newRoute()
	for range steps {
		switch op := r.IntN(100); {
		case op < 4:
			newRoute()
		case op < 30:
			bs := brokers()
			b := bs[r.IntN(len(bs))]
			lat := time.Duration([]int64{0, 60, 120, 600, 2000, 4000, 16000}[r.IntN(7)]) * time.Millisecond
			iso, reach := r.IntN(3) == 0, r.IntN(3) != 0
			update(strategies, b, lat, iso, reach)
			log = append(log, fmt.Sprintf("update %s %v %t %t", b, lat, iso, reach))
		case op < 38:
			d := time.Duration([]int64{1, 500, 2000, 5000, 10000, 60000}[r.IntN(6)]) * time.Millisecond
			clk.Advance(d)
			log = append(log, fmt.Sprintf("advance %v", d))
		case op < 41:
			bs := brokers()
			b := bs[r.IntN(len(bs))]
			fast.table.Remove(b)
			walk.table.Remove(b)
			log = append(log, "remove "+b)
		case op < 44:
			bs := brokers()
			b, reach := bs[r.IntN(len(bs))], r.IntN(2) == 0
			fast.table.SetReachable(b, reach)
			walk.table.SetReachable(b, reach)
			log = append(log, fmt.Sprintf("reachable %s %t", b, reach))
		case op < 48:
			setIndex()
		default:
			in := PickInfo{ResetIndex: r.IntN(5) == 0}
			if r.IntN(2) == 0 {
				bs := brokers()
				in.LastBroker = bs[r.IntN(len(bs))]
			}
			log = append(log, fmt.Sprintf("select %+v", in))
			var got [2]string
			var st [2]Stage
			for i, s := range strategies {
				if in.ResetIndex { // both resets land on the same value
					infos[i].Index().Store(int32(seed) + int32(len(log)))
					in2 := in
					in2.ResetIndex = false
					p, ok := s.Select(infos[i], in2)
					got[i], st[i] = pickString(p, ok), p.Stage
					continue
				}
				p, ok := s.Select(infos[i], in)
				got[i], st[i] = pickString(p, ok), p.Stage
			}
			if got[0] != got[1] || st[0] != st[1] {
				fail("Select(%+v) = %s (%s) over the summary, %s (%s) walking", in, got[0], st[0], got[1], st[1])
			}
			if a, b := infos[0].Index().Load(), infos[1].Index().Load(); a != b {
				fail("index after Select(%+v) = %d over the summary, %d walking", in, a, b)
			}
			if a, b := fast.table.worst.Load(), walk.table.worst.Load(); a != b {
				fail("worst index after Select(%+v) = %d with the kept order, %d sorting", in, a, b)
			}
			stages[st[0]]++
		}
	}
}

func update(ss []*Strategy, b string, lat time.Duration, iso, reach bool) {
	for _, s := range ss {
		s.Update(b, lat, iso, reach)
	}
}

func pickString(p Pick, ok bool) string {
	if !ok {
		return "null"
	}
	return p.Queue.String()
}
