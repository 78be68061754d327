package route_test

import (
	"math"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/route"
)

// publishInfo builds a publish info over "broker:count" pairs, in order, with
// its index stored at index.
func publishInfo(t *testing.T, index int32, spec ...any) *route.PublishInfo {
	t.Helper()
	var qs []route.MessageQueue
	for i := 0; i < len(spec); i += 2 {
		for q := range spec[i+1].(int) {
			qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: spec[i].(string), QueueID: q})
		}
	}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		t.Fatal(err)
	}
	info.Index().Store(index)
	return info
}

func queueOrNull(q route.MessageQueue, ok bool) string {
	if !ok {
		return "null"
	}
	return q.String()
}

// TestSelectFiltered covers the filtered pick: up to n probes, each moving
// the index by one, at position abs(next() % n).
func TestSelectFiltered(t *testing.T) {
	tests := []struct {
		name      string
		index     int32
		admit     map[string]bool // queue -> admitted; missing means refused
		want      string
		wantIndex int32
	}{
		{"first probe admitted", 0, map[string]bool{"b:0": true}, "b:0", 1},
		{"third probe admitted", 0, map[string]bool{"a:0": true}, "a:0", 3},
		{"none admitted: n probes", 0, nil, "null", 3},
		{"wrap at MaxInt32", math.MaxInt32 - 1, map[string]bool{"a:0": true}, "a:0", math.MinInt32},
		{"negative index", -2, map[string]bool{"a:0": true}, "a:0", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			info := publishInfo(t, tt.index, "a", 1, "b", 1, "c", 1)
			judge := func(q route.MessageQueue) bool { return tt.admit[q.String()] }
			f1 := mocks.NewMockQueueFilter(ctrl)
			f2 := mocks.NewMockQueueFilter(ctrl)
			probes := int(uint32(tt.wantIndex - tt.index))
			// Every filter is asked on every probe (the reference ANDs
			// them all), and a filter admitting everything does not change
			// the answer.
			f1.EXPECT().Filter(gomock.Any()).DoAndReturn(judge).Times(probes)
			f2.EXPECT().Filter(gomock.Any()).Return(true).Times(probes)
			q, ok := info.Select(f1, f2)
			if got := queueOrNull(q, ok); got != tt.want {
				t.Errorf("Select() = %s, want %s", got, tt.want)
			}
			if got := info.Index().Load(); got != tt.wantIndex {
				t.Errorf("index after Select() = %d, want %d", got, tt.wantIndex)
			}
		})
	}
}

func TestSelectAllFiltersEvaluated(t *testing.T) {
	ctrl := gomock.NewController(t)
	info := publishInfo(t, 0, "a", 1, "b", 1)
	refuse := mocks.NewMockQueueFilter(ctrl)
	admit := mocks.NewMockQueueFilter(ctrl)
	// The first filter refuses b:0, and the second is still asked about it.
	gomock.InOrder(
		refuse.EXPECT().Filter(route.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}).Return(false),
		admit.EXPECT().Filter(route.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}).Return(true),
		refuse.EXPECT().Filter(route.MessageQueue{Topic: "T", BrokerName: "a", QueueID: 0}).Return(true),
		admit.EXPECT().Filter(route.MessageQueue{Topic: "T", BrokerName: "a", QueueID: 0}).Return(true),
	)
	q, ok := info.Select(refuse, admit)
	if got := queueOrNull(q, ok); got != "a:0" {
		t.Errorf("Select() = %s, want a:0", got)
	}
}

func TestSelectNoFiltersAndSelectAny(t *testing.T) {
	tests := []struct {
		name  string
		index int32
		want  string
	}{
		{"from 0", 0, "b:0"},
		{"from 2", 2, "a:0"},
		{"at MaxInt32", math.MaxInt32, "a:0"},       // next() = MinInt32 & mask = 0
		{"at MaxInt32-1", math.MaxInt32 - 1, "b:0"}, // next() = MaxInt32, % 3 = 1
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, pick := range []struct {
				name string
				f    func(*route.PublishInfo) (route.MessageQueue, bool)
			}{
				{"Select()", func(p *route.PublishInfo) (route.MessageQueue, bool) { return p.Select() }},
				{"SelectAny()", (*route.PublishInfo).SelectAny},
				{"SelectAvoiding(\"\")", func(p *route.PublishInfo) (route.MessageQueue, bool) { return p.SelectAvoiding("") }},
			} {
				info := publishInfo(t, tt.index, "a", 1, "b", 1, "c", 1)
				q, ok := pick.f(info)
				if got := queueOrNull(q, ok); got != tt.want {
					t.Errorf("%s = %s, want %s", pick.name, got, tt.want)
				}
				if got := info.Index().Load(); got != tt.index+1 {
					t.Errorf("%s moved the index to %d, want %d", pick.name, got, tt.index+1)
				}
			}
		})
	}
}

// TestSelectAvoiding follows the trace operation tpselect: up to n
// unfiltered picks for a queue not on the last broker, then one more.
func TestSelectAvoiding(t *testing.T) {
	tests := []struct {
		name      string
		route     []any // broker, count, ...
		index     int32
		last      string
		want      string
		wantIndex int32
	}{
		{"no last broker", []any{"a", 2, "b", 1}, 0, "", "a:1", 1},
		{"first probe not on last", []any{"a", 2, "b", 1}, 0, "b", "a:1", 1},
		{"skips the last broker", []any{"a", 2, "b", 1}, 1, "b", "a:0", 3},
		{"unknown last broker", []any{"a", 2, "b", 1}, 0, "zz", "a:1", 1},
		{"all on last: n misses, then one more pick", []any{"a", 3}, 0, "a", "a:1", 4},
		{"wraps at MaxInt32: n misses, then b", []any{"a", 2, "b", 1}, math.MaxInt32 - 1, "a", "b:0", math.MinInt32 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := publishInfo(t, tt.index, tt.route...)
			q, ok := info.SelectAvoiding(tt.last)
			if got := queueOrNull(q, ok); got != tt.want {
				t.Errorf("SelectAvoiding(%q) = %s, want %s", tt.last, got, tt.want)
			}
			if got := info.Index().Load(); got != tt.wantIndex {
				t.Errorf("index after SelectAvoiding(%q) = %d, want %d", tt.last, got, tt.wantIndex)
			}
		})
	}
}

func TestSelectEmptyRoute(t *testing.T) {
	ctrl := gomock.NewController(t)
	info := publishInfo(t, 7)
	f := mocks.NewMockQueueFilter(ctrl)
	f.EXPECT().Filter(gomock.Any()).Times(0)
	picks := map[string]func() (route.MessageQueue, bool){
		"Select(f)":         func() (route.MessageQueue, bool) { return info.Select(f) },
		"Select()":          func() (route.MessageQueue, bool) { return info.Select() },
		"SelectAny()":       info.SelectAny,
		"SelectAvoiding(a)": func() (route.MessageQueue, bool) { return info.SelectAvoiding("a") },
	}
	for name, pick := range picks {
		if q, ok := pick(); ok || q != (route.MessageQueue{}) {
			t.Errorf("%s on an empty route = %v, %t, want zero, false", name, q, ok)
		}
	}
	if got := info.Index().Load(); got != 7 {
		t.Errorf("index after picks on an empty route = %d, want 7 (untouched)", got)
	}
}

func TestResetIndex(t *testing.T) {
	ctrl := gomock.NewController(t)
	src := mocks.NewMockRandomSource(ctrl)
	src.EXPECT().Int32().Return(int32(5))
	src.EXPECT().Int32n(int32(math.MaxInt32)).Return(int32(40))
	info, err := route.NewPublishInfoFromQueues("T", []route.MessageQueue{{Topic: "T", BrokerName: "a"}}, route.WithRandom(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Index().Load(); got != 5 {
		t.Errorf("fresh index = %d, want 5 (the source's Int32)", got)
	}
	info.ResetIndex()
	if got := info.Index().Load(); got != 40 {
		t.Errorf("index after ResetIndex() = %d, want 40", got)
	}
}

func TestQueueFilterFuncAndAvoidBroker(t *testing.T) {
	a := route.MessageQueue{Topic: "T", BrokerName: "a"}
	b := route.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	tests := []struct {
		name   string
		filter route.QueueFilter
		q      route.MessageQueue
		want   bool
	}{
		{"func admits", route.QueueFilterFunc(func(q route.MessageQueue) bool { return q.QueueID == 1 }), b, true},
		{"func refuses", route.QueueFilterFunc(func(q route.MessageQueue) bool { return q.QueueID == 1 }), a, false},
		{"avoid a refuses a", route.AvoidBroker("a"), a, false},
		{"avoid a admits b", route.AvoidBroker("a"), b, true},
		{"avoid nobody admits a", route.AvoidBroker(""), a, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.filter.Filter(tt.q); got != tt.want {
				t.Errorf("Filter(%v) = %t, want %t", tt.q, got, tt.want)
			}
		})
	}
}

func TestMemo(t *testing.T) {
	info := publishInfo(t, 0, "a", 1)
	o1, o2 := route.NewMemoOwner(), route.NewMemoOwner()
	if o1 == o2 {
		t.Fatalf("NewMemoOwner() returned %d twice", o1)
	}
	if got := info.Memo(o1); got != nil {
		t.Errorf("Memo() on a new publish info = %v, want nil", got)
	}
	info.SetMemo(o1, "one")
	if got := info.Memo(o1); got != "one" {
		t.Errorf("Memo(o1) = %v, want one", got)
	}
	if got := info.Memo(o2); got != nil {
		t.Errorf("Memo(o2) = %v, want nil (o1 stored it)", got)
	}
	info.SetMemo(o2, "two")
	if got := info.Memo(o1); got != nil {
		t.Errorf("Memo(o1) after o2 stored = %v, want nil (one memo per publish info)", got)
	}
	if got := info.Memo(o2); got != "two" {
		t.Errorf("Memo(o2) = %v, want two", got)
	}
}

// TestSelectConcurrent checks that concurrent picks are race-free and that
// each moves the shared index exactly as far as alone.
func TestSelectConcurrent(t *testing.T) {
	info := publishInfo(t, 0, "a", 2, "b", 2)
	refuseA := route.AvoidBroker("a")
	const goroutines, each = 4, 500
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if q, ok := info.Select(refuseA); !ok || q.BrokerName != "b" {
					t.Errorf("Select(avoid a) = %v, %t, want a queue on b", q, ok)
					return
				}
				info.SelectAny()
				info.SelectAvoiding("b")
			}
		}()
	}
	wg.Wait()
}
