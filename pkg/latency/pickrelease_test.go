package latency_test

import (
	"reflect"
	"testing"
	"unsafe"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// TestPickStaysFourWords guards the pick's size: Select returns a Pick by
// value on every send, and a fifth word (a pointer to per-broker state, as
// an earlier pick design had) made every pick slower in BenchmarkSelect. The slot handle lives in the padding after
// Stage: on a 64-bit platform a Pick is 32 bytes.
func TestPickStaysFourWords(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size is asserted on 64-bit platforms")
	}
	if got := unsafe.Sizeof(latency.Pick{}); got != 32 {
		t.Errorf("unsafe.Sizeof(Pick{}) = %d, want 32 (four words)", got)
	}
}

// releasingReporter is a Reporter of another kind that holds something per
// pick: it implements latency.Releaser, and records the picks released.
type releasingReporter struct {
	*mocks.MockReporter
	released []latency.Pick
}

func (r *releasingReporter) Release(p latency.Pick) { r.released = append(r.released, p) }

// TestPickReleaseAnyReporter checks that Pick.Release reaches any Reporter
// that implements latency.Releaser (here one that is not a Strategy), with
// the pick; that a Reporter that does not implement it is left alone (its
// Report is not called); and that a zero Pick releases nothing.
func TestPickReleaseAnyReporter(t *testing.T) {
	ctrl := gomock.NewController(t)
	q := &route.MessageQueue{Topic: "T", BrokerName: "a"}
	r := &releasingReporter{MockReporter: mocks.NewMockReporter(ctrl)}
	p := latency.Pick{Queue: q, Stage: latency.StageAny, Reporter: r}
	p.Release()
	if len(r.released) != 1 || r.released[0] != p {
		t.Errorf("Release on a Releaser's pick: released %v, want [%v]", r.released, p)
	}
	n := len(r.released)
	latency.Pick{Reporter: r}.Release() // no queue: nothing picked
	if len(r.released) != n {
		t.Errorf("Release of a pick without a queue reached the Reporter: %v", r.released)
	}
	plain := mocks.NewMockReporter(ctrl) // no Report expected: a call fails the test
	latency.Pick{Queue: q, Reporter: plain}.Release()
	latency.Pick{}.Release()
}

// TestStrategyIsNotReleaser guards Pick.Release's shortcut, which skips a
// Strategy's picks without asking whether the Reporter is a Releaser: a
// Strategy holds nothing per pick and must not become one.
func TestStrategyIsNotReleaser(t *testing.T) {
	if reflect.TypeFor[*latency.Strategy]().Implements(reflect.TypeFor[latency.Releaser]()) {
		t.Error("*Strategy implements Releaser: Pick.Release would skip its Release")
	}
}

// loadRoute is a route of one queue per broker.
func loadRoute(t *testing.T, brokers ...string) *route.PublishInfo {
	t.Helper()
	var qs []route.MessageQueue
	for _, b := range brokers {
		qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: b})
	}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// pickOn picks until the pick is on broker (releasing the others) and
// returns it.
func pickOn(t *testing.T, s *latency.Strategy, info *route.PublishInfo, broker string) latency.Pick {
	t.Helper()
	for range 16 {
		p, _ := s.Select(info, latency.PickInfo{})
		if p.Queue.BrokerName == broker {
			return p
		}
		p.Release()
	}
	t.Fatalf("no pick on %s in 16", broker)
	return latency.Pick{}
}
