package route_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/route"
)

// queueNames formats queues the way the routing traces print them.
func queueNames(qs []route.MessageQueue) string {
	parts := make([]string, len(qs))
	for i, q := range qs {
		parts[i] = q.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func master(name string) route.BrokerData {
	return route.BrokerData{BrokerName: name, BrokerAddrs: map[int64]string{route.MasterID: "addr-" + name}}
}

func slaveOnly(name string) route.BrokerData {
	return route.BrokerData{BrokerName: name, BrokerAddrs: map[int64]string{1: "slave-" + name}}
}

func qd(name string, nums, perm int) route.QueueData {
	return route.QueueData{BrokerName: name, ReadQueueNums: nums, WriteQueueNums: nums, Perm: perm}
}

const rw = route.PermRead | route.PermWrite

func TestNewPublishInfoNormal(t *testing.T) {
	tests := []struct {
		name string
		data route.TopicRouteData
		want string
	}{
		{
			name: "sorted by broker name",
			data: route.TopicRouteData{
				QueueDatas:  []route.QueueData{qd("c", 1, rw), qd("a", 2, rw), qd("b", 1, rw)},
				BrokerDatas: []route.BrokerData{master("a"), master("b"), master("c")},
			},
			want: "[a:0 a:1 b:0 c:0]",
		},
		{
			name: "perm not writable skipped",
			data: route.TopicRouteData{
				QueueDatas:  []route.QueueData{qd("a", 2, route.PermRead), qd("b", 1, route.PermWrite), qd("c", 1, route.PermInherit|route.PermPriority)},
				BrokerDatas: []route.BrokerData{master("a"), master("b"), master("c")},
			},
			want: "[b:0]",
		},
		{
			name: "odd perms use only the write bit",
			data: route.TopicRouteData{
				QueueDatas:  []route.QueueData{qd("a", 1, -1), qd("b", 1, 1<<20|route.PermWrite), qd("c", 1, -3)},
				BrokerDatas: []route.BrokerData{master("a"), master("b"), master("c")},
			},
			want: "[a:0 b:0]", // -1 and -3 in two's complement: -1 has bit 1, -3 (…11101) does not
		},
		{
			name: "missing broker data skipped",
			data: route.TopicRouteData{
				QueueDatas:  []route.QueueData{qd("a", 1, rw), qd("b", 2, rw)},
				BrokerDatas: []route.BrokerData{master("b")},
			},
			want: "[b:0 b:1]",
		},
		{
			name: "no master skipped",
			data: route.TopicRouteData{
				QueueDatas:  []route.QueueData{qd("a", 1, rw), qd("b", 2, rw)},
				BrokerDatas: []route.BrokerData{slaveOnly("a"), master("b")},
			},
			want: "[b:0 b:1]",
		},
		{
			name: "nil broker address map means no master",
			data: route.TopicRouteData{
				QueueDatas:  []route.QueueData{qd("a", 1, rw)},
				BrokerDatas: []route.BrokerData{{BrokerName: "a"}},
			},
			want: "[]",
		},
		{
			name: "first broker data of a name wins",
			data: route.TopicRouteData{
				QueueDatas:  []route.QueueData{qd("a", 1, rw)},
				BrokerDatas: []route.BrokerData{slaveOnly("a"), master("a")},
			},
			want: "[]",
		},
		{
			name: "duplicate queue data of one broker both contribute, in input order",
			data: route.TopicRouteData{
				QueueDatas:  []route.QueueData{qd("b", 1, rw), qd("a", 2, rw), qd("a", 1, rw)},
				BrokerDatas: []route.BrokerData{master("a"), master("b")},
			},
			want: "[a:0 a:1 a:0 b:0]",
		},
		{
			name: "zero write queues",
			data: route.TopicRouteData{
				QueueDatas:  []route.QueueData{qd("a", 0, rw), qd("b", 1, rw)},
				BrokerDatas: []route.BrokerData{master("a"), master("b")},
			},
			want: "[b:0]",
		},
		{
			name: "empty data",
			data: route.TopicRouteData{},
			want: "[]",
		},
		{
			name: "empty order conf is a normal topic",
			data: route.TopicRouteData{
				OrderTopicConf: route.Str(""),
				QueueDatas:     []route.QueueData{qd("a", 1, rw)},
				BrokerDatas:    []route.BrokerData{master("a")},
			},
			want: "[a:0]",
		},
		{
			name: "empty order conf and a static mapping is still a normal topic",
			data: route.TopicRouteData{
				OrderTopicConf:            route.Str(""),
				QueueDatas:                []route.QueueData{qd("a", 1, rw)},
				BrokerDatas:               []route.BrokerData{master("a")},
				TopicQueueMappingByBroker: map[string]route.TopicQueueMappingInfo{"a": {Scope: route.Str(route.GlobalScope), TotalQueues: 4}},
			},
			want: "[a:0]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.data.QueueDatas)
			info, err := route.NewPublishInfo("T", &tt.data)
			if err != nil {
				t.Fatalf("NewPublishInfo() error = %v", err)
			}
			if got := queueNames(info.Queues()); got != tt.want {
				t.Errorf("NewPublishInfo() queues = %s, want %s", got, tt.want)
			}
			if info.Ordered() {
				t.Errorf("Ordered() = true, want false")
			}
			if info.Topic() != "T" {
				t.Errorf("Topic() = %q, want T", info.Topic())
			}
			for i, q := range info.Queues() {
				if q.Topic != "T" {
					t.Errorf("Queue(%d).Topic = %q, want T", i, q.Topic)
				}
			}
			if !slices.Equal(tt.data.QueueDatas, before) {
				t.Errorf("NewPublishInfo() reordered the caller's QueueDatas: %v, was %v", tt.data.QueueDatas, before)
			}
		})
	}
}

func TestNewPublishInfoOrdered(t *testing.T) {
	tests := []struct {
		name string
		conf string
		want string
	}{
		{"written order", "bB:2;bA:2", "[bB:0 bB:1 bA:0 bA:1]"},
		{"trailing separator accepted", "a:1;", "[a:0]"},
		{"trailing separators accepted", "a:1;;;", "[a:0]"},
		{"extra fields ignored", "a:2:x:y", "[a:0 a:1]"},
		{"trailing colon after count", "a:1:", "[a:0]"},
		{"zero count", "a:0;b:1", "[b:0]"},
		{"plus sign as Java parses it", "a:+2", "[a:0 a:1]"},
		{"leading zeros", "a:002", "[a:0 a:1]"},
		{"only separators", ";;", "[]"},
		{"same broker twice", "a:1;a:2", "[a:0 a:0 a:1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := &route.TopicRouteData{
				OrderTopicConf: route.Str(tt.conf),
				// Ordered topics ignore permissions, masters and mappings.
				QueueDatas:                []route.QueueData{qd("zz", 3, 0)},
				TopicQueueMappingByBroker: map[string]route.TopicQueueMappingInfo{"a": {Scope: route.Str(route.GlobalScope), TotalQueues: 2}},
			}
			info, err := route.NewPublishInfo("T", data)
			if err != nil {
				t.Fatalf("NewPublishInfo(%q) error = %v", tt.conf, err)
			}
			if got := queueNames(info.Queues()); got != tt.want {
				t.Errorf("NewPublishInfo(%q) queues = %s, want %s", tt.conf, got, tt.want)
			}
			if !info.Ordered() {
				t.Errorf("Ordered() = false, want true")
			}
		})
	}
}

func TestNewPublishInfoOrderedMalformed(t *testing.T) {
	tests := []struct {
		name    string
		conf    string
		wantMsg string // part of the error text
	}{
		{"no count", "a", `entry "a" is not broker:count`},
		{"count not a number", "a:x", `entry "a:x" has a count that is not a number`},
		{"empty count", "a:", `entry "a:" is not broker:count`},
		{"leading separator", ";a:1", `entry "" is not broker:count`},
		{"empty entry", "a:1;;b:1", `entry "" is not broker:count`},
		{"negative count", "a:-1", `entry "a:-1" has a count outside 0..65536`},
		{"huge count", "a:65537", "has a count outside"},
		{"count over int32", "a:2147483648", "has a count that is not a number"},
		{"empty broker name", ":1", "has an empty broker name"},
		{"only colons", ":", "is not broker:count"},
		{"sign only", "a:-", "not a number"},
		{"space in count", "a: 1", "not a number"},
		{"unicode digit", "a:\u0661", "not a number"},
		{"too many queues in total", strings.Repeat("a:65536;", 17), "brings the topic over 1048576 queues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := route.NewPublishInfo("T", &route.TopicRouteData{OrderTopicConf: route.Str(tt.conf)})
			if !errors.Is(err, route.ErrInvalidRoute) {
				t.Fatalf("NewPublishInfo(%q) error = %v, want one matching ErrInvalidRoute", tt.conf, err)
			}
			var re *route.Error
			if !errors.As(err, &re) || re.Field != "orderTopicConf" || re.Value != tt.conf {
				t.Errorf("NewPublishInfo(%q) error = %#v, want a *route.Error for field orderTopicConf with the conf as value", tt.conf, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("NewPublishInfo(%q) error = %q, want it to contain %q", tt.conf, err, tt.wantMsg)
			}
		})
	}
}

// TestNewPublishInfoStatic follows the reference's
// ClientMetadata.topicRouteData2EndpointsForStaticTopic: per scope, logical
// queues 0..max-1 where max is the largest total among the scope's mappings
// whose epoch is at least -1; broker "__syslo__" + scope ("__syslo__global__"
// for the global scope); all sorted by queue id.
func TestNewPublishInfoStatic(t *testing.T) {
	scope := route.Str
	tests := []struct {
		name     string
		mappings map[string]route.TopicQueueMappingInfo
		want     string
	}{
		{
			// MQClientInstanceTest: the mapping a default-constructed Java
			// TopicQueueMappingInfo makes (global scope, no queues) yields
			// none, and the normal queue data are ignored.
			name:     "java default mapping yields no queues",
			mappings: map[string]route.TopicQueueMappingInfo{"T": {Scope: scope(route.GlobalScope)}},
			want:     "[]",
		},
		{
			name:     "a mapping with no scope yields no queues",
			mappings: map[string]route.TopicQueueMappingInfo{"b1": {TotalQueues: 4}},
			want:     "[]",
		},
		{
			name:     "global scope naming",
			mappings: map[string]route.TopicQueueMappingInfo{"b1": {Scope: scope(route.GlobalScope), TotalQueues: 3, Epoch: 1}},
			want:     "[__syslo__global__:0 __syslo__global__:1 __syslo__global__:2]",
		},
		{
			name: "largest total of a scope wins",
			mappings: map[string]route.TopicQueueMappingInfo{
				"b1": {Scope: scope("s"), TotalQueues: 2, Epoch: 5},
				"b2": {Scope: scope("s"), TotalQueues: 3, Epoch: 1},
			},
			want: "[__syslo__s:0 __syslo__s:1 __syslo__s:2]",
		},
		{
			name: "epoch below -1 does not count",
			mappings: map[string]route.TopicQueueMappingInfo{
				"b1": {Scope: scope("s"), TotalQueues: 2, Epoch: -1},
				"b2": {Scope: scope("s"), TotalQueues: 5, Epoch: -2},
			},
			want: "[__syslo__s:0 __syslo__s:1]",
		},
		{
			name: "several scopes sorted by queue id then broker",
			mappings: map[string]route.TopicQueueMappingInfo{
				"b1": {Scope: scope("z"), TotalQueues: 2},
				"b2": {Scope: scope("a"), TotalQueues: 1},
				"b3": {Scope: scope(route.GlobalScope), TotalQueues: 2},
				"b4": {TotalQueues: 9},
			},
			want: "[__syslo__a:0 __syslo__global__:0 __syslo__z:0 __syslo__global__:1 __syslo__z:1]",
		},
		{
			name:     "negative total yields nothing",
			mappings: map[string]route.TopicQueueMappingInfo{"b1": {Scope: scope("s"), TotalQueues: -3}},
			want:     "[]",
		},
		{
			// "global__" and "__global__" both name broker
			// "__syslo__global__"; the reference keeps its queues in a map
			// keyed by queue, so each queue appears once.
			name: "scopes with the same mock broker name do not duplicate queues",
			mappings: map[string]route.TopicQueueMappingInfo{
				"b1": {Scope: scope(route.GlobalScope), TotalQueues: 2},
				"b2": {Scope: scope("global__"), TotalQueues: 3},
			},
			want: "[__syslo__global__:0 __syslo__global__:1 __syslo__global__:2]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := &route.TopicRouteData{
				QueueDatas:                []route.QueueData{qd("b1", 4, rw)},
				BrokerDatas:               []route.BrokerData{master("b1")},
				TopicQueueMappingByBroker: tt.mappings,
			}
			for range 5 { // map iteration order must not matter
				info, err := route.NewPublishInfo("T", data)
				if err != nil {
					t.Fatalf("NewPublishInfo() error = %v", err)
				}
				if got := queueNames(info.Queues()); got != tt.want {
					t.Fatalf("NewPublishInfo() queues = %s, want %s", got, tt.want)
				}
				if info.Ordered() {
					t.Fatalf("Ordered() = true, want false")
				}
			}
		})
	}
}

func TestMockBrokerName(t *testing.T) {
	tests := []struct{ scope, want string }{
		{route.GlobalScope, "__syslo__global__"},
		{"zone1", "__syslo__zone1"},
		{"", "__syslo__"},
	}
	for _, tt := range tests {
		t.Run(tt.scope, func(t *testing.T) {
			if got := route.MockBrokerName(tt.scope); got != tt.want {
				t.Errorf("MockBrokerName(%q) = %q, want %q", tt.scope, got, tt.want)
			}
		})
	}
}

func TestNewPublishInfoInvalid(t *testing.T) {
	tests := []struct {
		name      string
		data      *route.TopicRouteData
		wantField string
	}{
		{"nil data", nil, "route data"},
		{
			name:      "empty broker name names its position in the input",
			data:      &route.TopicRouteData{QueueDatas: []route.QueueData{qd("b", 1, rw), qd("", 1, rw)}},
			wantField: "queueDatas[1].brokerName",
		},
		{
			name:      "negative write queue count",
			data:      &route.TopicRouteData{QueueDatas: []route.QueueData{qd("a", -1, rw)}},
			wantField: "queueDatas[a].writeQueueNums",
		},
		{
			name:      "huge write queue count",
			data:      &route.TopicRouteData{QueueDatas: []route.QueueData{qd("a", route.MaxQueuesPerBroker+1, rw)}},
			wantField: "queueDatas[a].writeQueueNums",
		},
		{
			name: "huge static total",
			data: &route.TopicRouteData{TopicQueueMappingByBroker: map[string]route.TopicQueueMappingInfo{
				"b1": {Scope: route.Str("s"), TotalQueues: route.MaxQueuesPerBroker + 1},
			}},
			wantField: "topicQueueMappingByBroker[b1].totalQueues",
		},
		{
			name:      "too many queues in total",
			data:      manyBrokers(17, route.MaxQueuesPerBroker),
			wantField: "queueDatas",
		},
		{
			name:      "too many static queues in total",
			data:      manyScopes(17, route.MaxQueuesPerBroker),
			wantField: "topicQueueMappingByBroker",
		},
		{
			name:      "too many queue data entries, none with a write queue",
			data:      manyBrokers(route.MaxBrokerEntries+1, 0),
			wantField: "queueDatas",
		},
		{
			name:      "too many unwritable queue data entries",
			data:      manyUnwritable(route.MaxBrokerEntries + 1),
			wantField: "queueDatas",
		},
		{
			name:      "too many broker data entries",
			data:      manyBrokerDatas(route.MaxBrokerEntries + 1),
			wantField: "brokerDatas",
		},
		{
			name:      "too many static mappings, none with a scope",
			data:      manyMappings(route.MaxBrokerEntries + 1),
			wantField: "topicQueueMappingByBroker",
		},
		{
			name:      "too many queue data entries of an ordered topic",
			data:      ordered(manyBrokers(route.MaxBrokerEntries+1, 0), "a:1"),
			wantField: "queueDatas",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := route.NewPublishInfo("T", tt.data)
			if info != nil {
				t.Errorf("NewPublishInfo() = a publish info of %d queues, want nil", info.Len())
			}
			if !errors.Is(err, route.ErrInvalidRoute) {
				t.Fatalf("NewPublishInfo() error = %v, want one matching ErrInvalidRoute", err)
			}
			var re *route.Error
			if !errors.As(err, &re) {
				t.Fatalf("NewPublishInfo() error = %T, want *route.Error", err)
			}
			if re.Field != tt.wantField || re.Topic != "T" {
				t.Errorf("NewPublishInfo() error field = %q topic = %q, want %q and T", re.Field, re.Topic, tt.wantField)
			}
			if !strings.Contains(err.Error(), tt.wantField) || !strings.Contains(err.Error(), `"T"`) {
				t.Errorf("NewPublishInfo() error = %q, want it to name the topic and %s", err, tt.wantField)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		err  *route.Error
		want string
	}{
		{&route.Error{Topic: "T", Field: "f", Reason: "is bad"}, `route: topic "T": f: is bad`},
		{&route.Error{Topic: "T", Field: "f", Value: "v", Reason: "is bad"}, `route: topic "T": f "v": is bad`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if errors.Is(tt.err, errors.New("other")) {
				t.Errorf("errors.Is(err, other) = true, want false")
			}
		})
	}
}

// TestWriteQueueNums follows 4.9.8's getQueueIdByBroker: the first writable
// queue data of the broker (route sorted by name), no master check, -1 when
// there is none.
func TestWriteQueueNums(t *testing.T) {
	data := &route.TopicRouteData{
		QueueDatas: []route.QueueData{
			qd("b", 3, route.PermRead), qd("b", 5, rw), qd("b", 7, rw),
			qd("a", 2, rw), qd("noMaster", 4, rw), qd("readOnly", 4, route.PermRead),
		},
		BrokerDatas: []route.BrokerData{master("a"), master("b"), slaveOnly("noMaster"), master("readOnly")},
	}
	info, err := route.NewPublishInfo("T", data)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		broker string
		want   int
	}{
		{"a", 2},
		{"b", 5},
		{"noMaster", 4},
		{"readOnly", -1},
		{"unknown", -1},
		{"", -1},
	}
	for _, tt := range tests {
		t.Run(tt.broker, func(t *testing.T) {
			if got := info.WriteQueueNums(tt.broker); got != tt.want {
				t.Errorf("WriteQueueNums(%q) = %d, want %d", tt.broker, got, tt.want)
			}
		})
	}

	// Ordered and static publish infos answer from the same queue data.
	data.OrderTopicConf = route.Str("x:1")
	ordered, err := route.NewPublishInfo("T", data)
	if err != nil {
		t.Fatal(err)
	}
	if got := ordered.WriteQueueNums("b"); got != 5 {
		t.Errorf("ordered WriteQueueNums(b) = %d, want 5", got)
	}
	if got := ordered.WriteQueueNums("x"); got != -1 {
		t.Errorf("ordered WriteQueueNums(x) = %d, want -1 (no queue data)", got)
	}
}

func TestNewPublishInfoFromQueues(t *testing.T) {
	qs := []route.MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 0}, {Topic: "T", BrokerName: "a", QueueID: 7}, {Topic: "T", BrokerName: "b", QueueID: 1}}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		t.Fatal(err)
	}
	qs[0].BrokerName = "changed"
	if got, want := queueNames(info.Queues()), "[b:0 a:7 b:1]"; got != want {
		t.Errorf("Queues() = %s, want %s (in the given order, copied)", got, want)
	}
	if got := info.WriteQueueNums("b"); got != 2 {
		t.Errorf("WriteQueueNums(b) = %d, want 2", got)
	}
	if got := info.Brokers(); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("Brokers() = %v, want [b a]", got)
	}
	for i, want := range []int{0, 1, 0} {
		if got := info.BrokerOf(i); got != want {
			t.Errorf("BrokerOf(%d) = %d, want %d", i, got, want)
		}
	}
	if i, ok := info.BrokerIndex("a"); !ok || i != 1 {
		t.Errorf("BrokerIndex(a) = %d, %t, want 1, true", i, ok)
	}
	if _, ok := info.BrokerIndex("c"); ok {
		t.Errorf("BrokerIndex(c) ok = true, want false")
	}
	if !info.HasBroker("a") || info.HasBroker("c") {
		t.Errorf("HasBroker(a), HasBroker(c) = %t, %t, want true, false", info.HasBroker("a"), info.HasBroker("c"))
	}
	if info.Len() != 3 || !info.OK() {
		t.Errorf("Len(), OK() = %d, %t, want 3, true", info.Len(), info.OK())
	}
	if got := info.Queue(1); got != (route.MessageQueue{Topic: "T", BrokerName: "a", QueueID: 7}) {
		t.Errorf("Queue(1) = %v, want a:7", got)
	}
	if got := info.QueueRef(2); *got != info.Queue(2) {
		t.Errorf("QueueRef(2) = %v, want %v", *got, info.Queue(2))
	}
	out := info.Queues()
	out[0].BrokerName = "mutated"
	if info.Queue(0).BrokerName != "b" {
		t.Errorf("Queues() returned the publish info's own slice")
	}

	empty, err := route.NewPublishInfoFromQueues("T", nil)
	if err != nil {
		t.Fatal(err)
	}
	if empty.OK() || empty.Len() != 0 {
		t.Errorf("empty OK(), Len() = %t, %d, want false, 0", empty.OK(), empty.Len())
	}

	_, err = route.NewPublishInfoFromQueues("T", []route.MessageQueue{{Topic: "T", BrokerName: "a"}, {Topic: "T", QueueID: 3}})
	var re *route.Error
	if !errors.Is(err, route.ErrInvalidRoute) || !errors.As(err, &re) || re.Field != "queues" || !strings.Contains(re.Reason, "queue 1") {
		t.Errorf("NewPublishInfoFromQueues(empty broker name) error = %v, want a *route.Error on queues naming queue 1", err)
	}
}

func TestPermissions(t *testing.T) {
	tests := []struct {
		perm               int
		writable, readable bool
	}{
		{0, false, false},
		{route.PermWrite, true, false},
		{route.PermRead, false, true},
		{route.PermRead | route.PermWrite, true, true},
		{route.PermInherit | route.PermPriority, false, false},
		{-1, true, true},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.perm), func(t *testing.T) {
			if got := route.Writable(tt.perm); got != tt.writable {
				t.Errorf("Writable(%d) = %t, want %t", tt.perm, got, tt.writable)
			}
			if got := route.Readable(tt.perm); got != tt.readable {
				t.Errorf("Readable(%d) = %t, want %t", tt.perm, got, tt.readable)
			}
		})
	}
}

func TestMasterAddr(t *testing.T) {
	if a, ok := master("a").MasterAddr(); !ok || a != "addr-a" {
		t.Errorf("MasterAddr() = %q, %t, want addr-a, true", a, ok)
	}
	if a, ok := slaveOnly("a").MasterAddr(); ok || a != "" {
		t.Errorf("slave-only MasterAddr() = %q, %t, want \"\", false", a, ok)
	}
}

func TestMessageQueueString(t *testing.T) {
	q := route.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 12}
	if got := q.String(); got != "broker-a:12" {
		t.Errorf("String() = %q, want broker-a:12", got)
	}
}

func manyBrokers(brokers, queues int) *route.TopicRouteData {
	data := &route.TopicRouteData{}
	for i := range brokers {
		name := "b" + strconv.Itoa(i)
		data.QueueDatas = append(data.QueueDatas, qd(name, queues, rw))
		data.BrokerDatas = append(data.BrokerDatas, master(name))
	}
	return data
}

// TestNewPublishInfoEntryBound checks that a list of route data over
// MaxBrokerEntries is refused with an error naming the list, its length and
// the bound, though its entries contribute no queue.
func TestNewPublishInfoEntryBound(t *testing.T) {
	n := route.MaxBrokerEntries + 1
	_, err := route.NewPublishInfo("T", manyBrokers(n, 0))
	if err == nil {
		t.Fatalf("NewPublishInfo(%d brokers with no write queue) error = nil, want one", n)
	}
	for _, want := range []string{"queueDatas", strconv.Itoa(n) + " entries", strconv.Itoa(route.MaxBrokerEntries)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NewPublishInfo() error = %q, want it to say %q", err, want)
		}
	}
}

// manyUnwritable is n read-only brokers of one queue each.
func manyUnwritable(n int) *route.TopicRouteData {
	data := manyBrokers(n, 1)
	for i := range data.QueueDatas {
		data.QueueDatas[i].Perm = route.PermRead
	}
	return data
}

// manyBrokerDatas is one broker with a queue and n broker data entries.
func manyBrokerDatas(n int) *route.TopicRouteData {
	data := manyBrokers(n, 0)
	data.QueueDatas = []route.QueueData{qd("b0", 1, rw)}
	return data
}

// manyMappings is n static queue mappings without a scope.
func manyMappings(n int) *route.TopicRouteData {
	data := &route.TopicRouteData{TopicQueueMappingByBroker: make(map[string]route.TopicQueueMappingInfo, n)}
	for i := range n {
		data.TopicQueueMappingByBroker["b"+strconv.Itoa(i)] = route.TopicQueueMappingInfo{TotalQueues: 1}
	}
	return data
}

// ordered makes data an ordered topic of conf.
func ordered(data *route.TopicRouteData, conf string) *route.TopicRouteData {
	data.OrderTopicConf = route.Str(conf)
	return data
}

func manyScopes(scopes, queues int) *route.TopicRouteData {
	data := &route.TopicRouteData{TopicQueueMappingByBroker: map[string]route.TopicQueueMappingInfo{}}
	for i := range scopes {
		data.TopicQueueMappingByBroker["b"+strconv.Itoa(i)] = route.TopicQueueMappingInfo{Scope: route.Str("s" + strconv.Itoa(i)), TotalQueues: queues}
	}
	return data
}

// TestNewPublishInfoLimits checks that the largest allowed brokers convert
// (the topic's total limit is checked before anything is allocated, see
// TestNewPublishInfoInvalid).
func TestNewPublishInfoLimits(t *testing.T) {
	tests := []struct {
		name string
		data *route.TopicRouteData
		want int
	}{
		{"normal", manyBrokers(1, route.MaxQueuesPerBroker), route.MaxQueuesPerBroker},
		{"static", manyScopes(2, route.MaxQueuesPerBroker/2), route.MaxQueuesPerBroker},
		{"ordered", &route.TopicRouteData{OrderTopicConf: route.Str("a:65536")}, route.MaxQueuesPerBroker},
		{"as many brokers as the entry bound", manyBrokers(route.MaxBrokerEntries, 1), route.MaxBrokerEntries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := route.NewPublishInfo("T", tt.data)
			if err != nil {
				t.Fatalf("NewPublishInfo() error = %v", err)
			}
			if info.Len() != tt.want {
				t.Errorf("Len() = %d, want %d", info.Len(), tt.want)
			}
		})
	}
}
