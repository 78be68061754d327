package route_test

import (
	"math"
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
