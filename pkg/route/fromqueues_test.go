package route_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/route"
)

// TestNewPublishInfoFromQueuesChecksTopics checks that queues of another
// topic are refused, every bad queue named in one error, and that a queue
// without a topic takes the publish info's, as documented.
func TestNewPublishInfoFromQueuesChecksTopics(t *testing.T) {
	_, err := route.NewPublishInfoFromQueues("orders", []route.MessageQueue{
		{Topic: "orders", BrokerName: "a", QueueID: 0},
		{Topic: "other", BrokerName: "a", QueueID: 1},
		{Topic: "orders", QueueID: 2},
		{Topic: "other", BrokerName: "b", QueueID: 0},
	})
	want := []string{
		`route: topic "orders": queues "a:1": queue 1 is of topic "other"`,
		`route: topic "orders": queues ":2": queue 2 has an empty broker name`,
		`route: topic "orders": queues "b:0": queue 3 is of topic "other"`,
	}
	if err == nil || !errors.Is(err, route.ErrInvalidRoute) {
		t.Fatalf("NewPublishInfoFromQueues(queues of another topic) error = %v, want ErrInvalidRoute", err)
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("NewPublishInfoFromQueues() error =\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	var re *route.Error
	if !errors.As(err, &re) || re.Field != "queues" {
		t.Errorf("errors.As(*route.Error) = %v, want one on queues", re)
	}

	info, err := route.NewPublishInfoFromQueues("orders", []route.MessageQueue{{BrokerName: "a"}, {Topic: "orders", BrokerName: "b"}})
	if err != nil {
		t.Fatalf("NewPublishInfoFromQueues(queue without a topic) error = %v", err)
	}
	if got := info.Queue(0).Topic; got != "orders" {
		t.Errorf("Queue(0).Topic = %q, want orders (filled in)", got)
	}
	if _, err := route.NewPublishInfoFromQueues("", []route.MessageQueue{{BrokerName: "a"}}); !errors.Is(err, route.ErrInvalidRoute) {
		t.Errorf("NewPublishInfoFromQueues(no topic) error = %v, want ErrInvalidRoute", err)
	}
}
