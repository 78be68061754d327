package producer_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// TestSendToQueue checks ordered sends to an explicit queue: one attempt on
// that queue, no retry, no fault update.
func TestSendToQueue(t *testing.T) {
	q := route.MessageQueue{Topic: "T", BrokerName: "A", QueueID: 0}
	t.Run("answered", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		h.expect(call{broker: "A", lat: ms(4)})
		res, err := h.p.SendToQueue(context.Background(), msg(), q)
		if err != nil || res.Queue != q {
			t.Errorf("SendToQueue() = %+v, %v, want an answer on %v", res, err, q)
		}
		if items := h.strat.Table().Items(); len(items) != 0 {
			t.Errorf("fault items = %+v, want none (ordered sends make no update)", items)
		}
	})
	t.Run("failure is not retried", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		h.expect(call{broker: "A", lat: ms(4), err: errTransport})
		_, err := h.p.SendToQueue(context.Background(), msg(), q)
		var se *producer.SendError
		if !errors.As(err, &se) || se.Attempts != 1 || !slices.Equal(se.Brokers, []string{"A"}) || !errors.Is(err, errTransport) {
			t.Errorf("SendToQueue() error = %v, want one attempt on A", err)
		}
		if items := h.strat.Table().Items(); len(items) != 0 {
			t.Errorf("fault items = %+v, want none", items)
		}
	})
	for _, code := range []int{2, 17} { // busy (flow control) and another broker code
		t.Run("broker code "+strconv.Itoa(code)+" stops as a broker error", func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			h.expect(call{broker: "A", lat: ms(4), err: &producer.BrokerError{Broker: "A", Code: code}})
			_, err := h.p.SendToQueue(context.Background(), msg(), q)
			var se *producer.SendError
			if !errors.As(err, &se) || se.Attempts != 1 || se.Stop != producer.StopBrokerError {
				t.Errorf("SendToQueue() error = %v, want one attempt stopped by the broker error", err)
			}
		})
	}
	t.Run("queue of another topic", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		other := route.MessageQueue{Topic: "U", BrokerName: "A"}
		if _, err := h.p.SendToQueue(context.Background(), msg(), other); !errors.Is(err, producer.ErrInvalidMessage) {
			t.Errorf("SendToQueue() error = %v, want ErrInvalidMessage", err)
		}
	})
}

// TestSendByKey checks ordered sends by key: the selector's queue, one
// attempt; a selector with no queue fails without an attempt.
func TestSendByKey(t *testing.T) {
	t.Run("hash selector", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		// Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE;
		// abs(MIN_VALUE % 3) == 2: queue C:0 of [A:0 B:0 C:0].
		h.expect(call{broker: "C"})
		res, err := h.p.SendByKey(context.Background(), msg(), producer.HashSelector{}, "polygenelubricants")
		if err != nil || res.Queue.BrokerName != "C" {
			t.Errorf("SendByKey() = %+v, %v, want an answer on C", res, err)
		}
	})
	t.Run("selector without a queue", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		sel := mocks.NewMockSelector(gomock.NewController(t))
		sel.EXPECT().SelectQueue(gomock.Any(), gomock.Any(), "k").Return(route.MessageQueue{}, false)
		_, err := h.p.SendByKey(context.Background(), msg(), sel, "k")
		var ce *producer.ClientError
		if !errors.As(err, &ce) {
			t.Errorf("SendByKey() error = %v, want a ClientError", err)
		}
	})
}

// TestJavaStringHash checks String.hashCode values computed by Java.
func TestJavaStringHash(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"hello", 99162322},
		{"Aa", 2112},
		{"BB", 2112},
		{"polygenelubricants", -2147483648},
		{"\U0001F600", 1772899}, // a surrogate pair: 0xD83D*31 + 0xDE00
	} {
		if got := producer.JavaStringHash(tt.s); got != tt.want {
			t.Errorf("JavaStringHash(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}
