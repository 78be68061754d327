package route_test

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/route"
)

// fuzzNames are the broker names and scopes fuzz data picks from: empty,
// ordinary, the global scope and a scope that shares its mock broker name.
var fuzzNames = []string{"", "a", "b", "c", route.GlobalScope, "global__"}

// fuzzCounts are the queue counts fuzz data picks from besides small ones.
var fuzzCounts = []int{-1, 0, route.MaxQueuesPerBroker, route.MaxQueuesPerBroker + 1, math.MinInt32, math.MaxInt32}

// decodeRoute turns fuzz bytes into route data: each 4-byte record is a queue
// data, a broker data or a static mapping, with odd perms, negative or huge
// counts, empty names and epochs around -1.
func decodeRoute(b []byte) *route.TopicRouteData {
	data := &route.TopicRouteData{}
	for len(b) >= 4 {
		kind, name, x, y := b[0], fuzzNames[int(b[1])%len(fuzzNames)], int8(b[2]), b[3]
		b = b[4:]
		count := int(x)
		if y&0x80 != 0 {
			count = fuzzCounts[int(uint8(x))%len(fuzzCounts)]
		}
		switch kind % 3 {
		case 0:
			data.QueueDatas = append(data.QueueDatas, route.QueueData{BrokerName: name, WriteQueueNums: count, ReadQueueNums: count, Perm: int(int8(y << 1))})
		case 1:
			addrs := map[int64]string{int64(y % 3): "addr"}
			if y&0x40 != 0 {
				addrs = nil
			}
			data.BrokerDatas = append(data.BrokerDatas, route.BrokerData{BrokerName: name, BrokerAddrs: addrs})
		case 2:
			if data.TopicQueueMappingByBroker == nil {
				data.TopicQueueMappingByBroker = map[string]route.TopicQueueMappingInfo{}
			}
			m := route.TopicQueueMappingInfo{TotalQueues: count, Epoch: int64(int8(y<<1)) / 32}
			if y&0x01 != 0 {
				m.Scope = route.Str(name)
			}
			data.TopicQueueMappingByBroker["broker"+strconv.Itoa(len(data.TopicQueueMappingByBroker))] = m
		}
	}
	return data
}

// FuzzNewPublishInfo converts arbitrary route data (ordered conf strings, odd
// perms, empty data, static mappings) and checks that nothing panics, that
// errors match ErrInvalidRoute as *route.Error, and that what converts is
// consistent: an ordered topic has the queues its conf lists, every queue is
// on a named broker of the topic, and every pick works.
func FuzzNewPublishInfo(f *testing.F) {
	f.Add("", false, []byte{})
	f.Add("brokerA:4;brokerB:4", true, []byte{})
	f.Add("a:1;;b:1", true, []byte{})
	f.Add("a:x", true, []byte{})
	f.Add(";a:1;", true, []byte{})
	f.Add("a:-1", true, []byte{})
	f.Add("", true, []byte{0, 1, 2, 6, 1, 1, 0, 0})
	f.Add("", false, []byte{0, 1, 2, 6, 1, 1, 0, 0, 0, 2, 3, 0x7f, 1, 2, 0, 0})
	f.Add("", false, []byte{2, 4, 3, 1, 2, 5, 2, 1, 2, 3, 1, 0x41, 0, 1, 1, 6})
	f.Add("", false, []byte{0, 1, 3, 0x80, 1, 1, 0, 0})
	f.Fuzz(func(t *testing.T, conf string, confSet bool, spec []byte) {
		data := decodeRoute(spec)
		if confSet {
			data.OrderTopicConf = route.Str(conf)
		}
		info, err := route.NewPublishInfo("T", data)
		if err != nil {
			var re *route.Error
			if !errors.Is(err, route.ErrInvalidRoute) || !errors.As(err, &re) {
				t.Fatalf("NewPublishInfo() error = %v (%T), want a *route.Error matching ErrInvalidRoute", err, err)
			}
			if re.Topic != "T" || re.Field == "" || re.Reason == "" {
				t.Fatalf("NewPublishInfo() error = %#v, want topic, field and reason set", re)
			}
			return
		}
		ordered := confSet && conf != ""
		if info.Ordered() != ordered {
			t.Fatalf("Ordered() = %t, want %t", info.Ordered(), ordered)
		}
		if ordered {
			if want := orderedQueueCount(conf); info.Len() != want {
				t.Fatalf("NewPublishInfo(conf %q) has %d queues, want %d", conf, info.Len(), want)
			}
		}
		if !ordered {
			if want := expectedQueues(data); queueNames(info.Queues()) != want {
				t.Fatalf("NewPublishInfo() queues = %s, want %s", queueNames(info.Queues()), want)
			}
		}
		if info.Len() > 16*route.MaxQueuesPerBroker {
			t.Fatalf("Len() = %d, over the topic limit", info.Len())
		}
		brokers := info.Brokers()
		for i := range info.Len() {
			q := info.Queue(i)
			if q.Topic != "T" || q.BrokerName == "" || q.QueueID < 0 || q.QueueID >= route.MaxQueuesPerBroker {
				t.Fatalf("Queue(%d) = %#v, want topic T, a broker name and an id in range", i, q)
			}
			if brokers[info.BrokerOf(i)] != q.BrokerName {
				t.Fatalf("Brokers()[BrokerOf(%d)] = %q, want %q", i, brokers[info.BrokerOf(i)], q.BrokerName)
			}
		}
		for _, b := range brokers {
			if n := info.WriteQueueNums(b); n < -1 {
				t.Fatalf("WriteQueueNums(%q) = %d, want >= -1", b, n)
			}
		}
		info.Index().Store(math.MaxInt32 - 1)
		for i := range 3 {
			if p := route.Position(info.Index().Add(1), max(info.Len(), 1)); info.Len() > 0 && (p < 0 || p >= info.Len()) {
				t.Fatalf("Position() after %d moves = %d, outside [0, %d)", i+1, p, info.Len())
			}
		}
	})
}

// orderedQueueCount counts the queues a valid orderTopicConf lists, read the
// simple way: entries split on ';' (trailing empty ones dropped), the count
// after the first ':'.
func orderedQueueCount(conf string) int {
	entries := strings.Split(conf, ";")
	for len(entries) > 0 && entries[len(entries)-1] == "" {
		entries = entries[:len(entries)-1]
	}
	total := 0
	for _, e := range entries {
		fields := strings.Split(e, ":")
		n, err := strconv.Atoi(fields[1])
		if err != nil {
			panic("a conf that converted has a bad count: " + strconv.Quote(conf))
		}
		total += n
	}
	return total
}

// expectedQueues lists a normal or static topic's queues the plain way, from
// the reference's description: a static mapping (with a nil conf) gives per
// mock broker the largest total of its mappings with a scope and an epoch
// of at least -1, sorted by queue id then broker; otherwise queue data
// sorted by broker name (stable), writable, whose first broker data has a
// master.
func expectedQueues(data *route.TopicRouteData) string {
	var qs []route.MessageQueue
	if data.OrderTopicConf == nil && len(data.TopicQueueMappingByBroker) > 0 {
		totals := map[string]int{}
		for _, m := range data.TopicQueueMappingByBroker {
			if m.Scope != nil && m.Epoch >= -1 {
				name := route.MockBrokerName(*m.Scope)
				totals[name] = max(totals[name], m.TotalQueues)
			}
		}
		for name, n := range totals {
			for i := range n {
				qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: name, QueueID: i})
			}
		}
		slices.SortFunc(qs, func(a, b route.MessageQueue) int {
			if a.QueueID != b.QueueID {
				return a.QueueID - b.QueueID
			}
			return strings.Compare(a.BrokerName, b.BrokerName)
		})
		return queueNames(qs)
	}
	qds := slices.Clone(data.QueueDatas)
	slices.SortStableFunc(qds, func(a, b route.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	for _, q := range qds {
		if q.Perm&route.PermWrite == 0 {
			continue
		}
		i := slices.IndexFunc(data.BrokerDatas, func(b route.BrokerData) bool { return b.BrokerName == q.BrokerName })
		if i < 0 {
			continue
		}
		if _, ok := data.BrokerDatas[i].BrokerAddrs[route.MasterID]; !ok {
			continue
		}
		for id := range q.WriteQueueNums {
			qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: q.BrokerName, QueueID: id})
		}
	}
	return queueNames(qs)
}
