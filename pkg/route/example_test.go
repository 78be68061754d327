package route_test

import (
	"errors"
	"fmt"

	"github.com/mqfault/mqfault/pkg/route"
)

// The route data a name server returns for a normal topic becomes the list of
// queues a producer picks from: sorted by broker name, writable brokers with a
// master only.
func ExampleNewPublishInfo() {
	data := &route.TopicRouteData{
		QueueDatas: []route.QueueData{
			{BrokerName: "broker-b", WriteQueueNums: 2, ReadQueueNums: 2, Perm: route.PermRead | route.PermWrite},
			{BrokerName: "broker-a", WriteQueueNums: 2, ReadQueueNums: 2, Perm: route.PermRead | route.PermWrite},
			{BrokerName: "broker-c", WriteQueueNums: 2, ReadQueueNums: 2, Perm: route.PermRead}, // not writable
		},
		BrokerDatas: []route.BrokerData{
			{BrokerName: "broker-a", BrokerAddrs: map[int64]string{route.MasterID: "10.0.0.1:10911"}},
			{BrokerName: "broker-b", BrokerAddrs: map[int64]string{route.MasterID: "10.0.0.2:10911"}},
			{BrokerName: "broker-c", BrokerAddrs: map[int64]string{route.MasterID: "10.0.0.3:10911"}},
		},
	}
	info, err := route.NewPublishInfo("orders", data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.Queues())
	// Output: [broker-a:0 broker-a:1 broker-b:0 broker-b:1]
}

// An ordered topic lists its queues in the order its orderTopicConf writes;
// a malformed conf is an error that names it.
func ExampleNewPublishInfo_ordered() {
	info, err := route.NewPublishInfo("orders", &route.TopicRouteData{OrderTopicConf: route.Str("broker-b:2;broker-a:1")})
	fmt.Println(info.Queues(), info.Ordered(), err)

	_, err = route.NewPublishInfo("orders", &route.TopicRouteData{OrderTopicConf: route.Str("broker-b:two")})
	fmt.Println(errors.Is(err, route.ErrInvalidRoute))
	fmt.Println(err)
	// Output:
	// [broker-b:0 broker-b:1 broker-a:0] true <nil>
	// true
	// route: topic "orders": orderTopicConf "broker-b:two": entry "broker-b:two" has a count that is not a number
}

// A static topic's logical queues live on mock brokers named after their
// scope.
func ExampleNewPublishInfo_static() {
	info, err := route.NewPublishInfo("orders", &route.TopicRouteData{
		TopicQueueMappingByBroker: map[string]route.TopicQueueMappingInfo{
			"broker-a": {Scope: route.Str(route.GlobalScope), TotalQueues: 2, Epoch: 3},
		},
	})
	fmt.Println(info.Queues(), err)
	// Output: [__syslo__global__:0 __syslo__global__:1] <nil>
}

// Producers whose routes do not come from a name server list their queues.
func ExampleNewPublishInfoFromQueues() {
	info, err := route.NewPublishInfoFromQueues("orders", []route.MessageQueue{
		{Topic: "orders", BrokerName: "east", QueueID: 0},
		{Topic: "orders", BrokerName: "west", QueueID: 0},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.Len(), info.Brokers(), info.WriteQueueNums("east"))
	// Output: 2 [east west] 1
}

// The index has Java's int arithmetic: it wraps at MaxInt32 and hands out
// values with the sign bit cleared.
func ExampleIndex() {
	x := route.NewIndex(nil)
	x.Store(2147483646)
	fmt.Println(x.Next(), x.Next(), x.Next(), x.Load())
	// Output: 2147483647 0 1 -2147483647
}

// A filter that keeps sends on one zone's brokers.
func ExampleQueueFilterFunc() {
	zone := map[string]string{"a": "east", "b": "west"}
	east := route.QueueFilterFunc(func(q route.MessageQueue) bool { return zone[q.BrokerName] == "east" })
	fmt.Println(east.Filter(route.MessageQueue{BrokerName: "a"}), east.Filter(route.MessageQueue{BrokerName: "b"}))
	// Output: true false
}
