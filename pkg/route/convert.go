package route

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MaxQueuesPerBroker bounds the queues one broker entry may contribute; route
// data asking for more is refused rather than allocated.
const MaxQueuesPerBroker = 1 << 16

// MaxBrokerEntries bounds the entries of each list of route data (queue
// data, broker data, static queue mappings), whatever they contribute: an
// entry with no write queue costs a conversion as much as any other.
const MaxBrokerEntries = 1 << 16

// maxQueues bounds the queues of one topic, whatever its kind; route data
// that would make more is refused before anything is allocated.
const maxQueues = 16 * MaxQueuesPerBroker

// NewPublishInfo converts route data to a publish info the way the reference
// does (Java MQClientInstance.topicRouteData2TopicPublishInfo):
//
//   - ordered topics (a non-empty OrderTopicConf such as "brokerA:4;brokerB:4"):
//     the queues in the order written, with no permission or master check;
//   - static topics (OrderTopicConf nil and a non-empty queue mapping): for
//     each scope, logical queues 0..total-1 on broker "__syslo__"+scope, sorted
//     by queue id (ties, which the reference leaves to hash order, by broker
//     name); a mapping without a scope yields no queues;
//   - normal topics: queue data sorted by broker name; a broker contributes its
//     WriteQueueNums queues only if its perm is writable and its broker data
//     has a master address.
//
// Data the reference would fail on (a malformed OrderTopicConf) or that can
// only be garbage (negative or huge queue counts, empty broker names, more
// than MaxBrokerEntries entries in a list, nil data) is an error matching
// ErrInvalidRoute that names the field and value. The conversion takes time
// linear in the entries and the queues, besides sorting the queue data by
// broker name.
func NewPublishInfo(topic string, data *TopicRouteData, opts ...Option) (*PublishInfo, error) {
	if data == nil {
		return nil, &Error{Topic: topic, Field: "route data", Reason: "is nil"}
	}
	if err := checkEntries(topic, data); err != nil {
		return nil, err
	}
	for i, qd := range data.QueueDatas {
		if qd.BrokerName == "" {
			return nil, &Error{Topic: topic, Field: "queueDatas[" + strconv.Itoa(i) + "].brokerName", Reason: "is empty"}
		}
		if qd.WriteQueueNums < 0 || qd.WriteQueueNums > MaxQueuesPerBroker {
			return nil, &Error{Topic: topic, Field: "queueDatas[" + qd.BrokerName + "].writeQueueNums", Value: strconv.Itoa(qd.WriteQueueNums),
				Reason: "must be between 0 and " + strconv.Itoa(MaxQueuesPerBroker)}
		}
	}
	// The queue data's positions in order of broker name, those of one name
	// in input order (a stable sort, as the reference's, without moving the
	// entries).
	qds := data.QueueDatas
	sorted := make([]int, len(qds))
	for i := range sorted {
		sorted[i] = i
	}
	slices.SortFunc(sorted, func(a, b int) int {
		if c := strings.Compare(qds[a].BrokerName, qds[b].BrokerName); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	writeNums := make(map[string]int, len(qds))
	for _, i := range sorted {
		qd := &qds[i]
		if _, seen := writeNums[qd.BrokerName]; !seen && Writable(qd.Perm) {
			writeNums[qd.BrokerName] = qd.WriteQueueNums
		}
	}

	switch {
	case data.OrderTopicConf != nil && *data.OrderTopicConf != "":
		queues, err := parseOrderConf(topic, *data.OrderTopicConf)
		if err != nil {
			return nil, err
		}
		return newPublishInfo(topic, queues, true, writeNums, opts), nil
	case data.OrderTopicConf == nil && len(data.TopicQueueMappingByBroker) > 0:
		queues, err := staticQueues(topic, data.TopicQueueMappingByBroker)
		if err != nil {
			return nil, err
		}
		return newPublishInfo(topic, queues, false, writeNums, opts), nil
	}

	type share struct {
		broker string
		nums   int
	}
	firstData := make(map[string]int, len(data.BrokerDatas)) // broker name -> index of its first broker data
	for i, bd := range data.BrokerDatas {
		if _, seen := firstData[bd.BrokerName]; !seen {
			firstData[bd.BrokerName] = i
		}
	}
	var shares []share
	total := 0
	for _, i := range sorted {
		qd := &qds[i]
		if !Writable(qd.Perm) {
			continue
		}
		b, ok := firstData[qd.BrokerName]
		if !ok {
			continue // the reference skips queue data whose broker it does not know yet
		}
		if _, ok := data.BrokerDatas[b].MasterAddr(); !ok {
			continue
		}
		if total += qd.WriteQueueNums; total > maxQueues {
			return nil, &Error{Topic: topic, Field: "queueDatas", Value: strconv.Itoa(len(data.QueueDatas)) + " entries",
				Reason: "bring the topic over " + strconv.Itoa(maxQueues) + " queues"}
		}
		shares = append(shares, share{qd.BrokerName, qd.WriteQueueNums})
	}
	queues := make([]MessageQueue, 0, total)
	for _, sh := range shares {
		for i := range sh.nums {
			queues = append(queues, MessageQueue{Topic: topic, BrokerName: sh.broker, QueueID: i})
		}
	}
	return newPublishInfo(topic, queues, false, writeNums, opts), nil
}

// checkEntries refuses route data with a list longer than MaxBrokerEntries,
// before anything is allocated for it.
func checkEntries(topic string, data *TopicRouteData) error {
	for _, l := range []struct {
		field string
		n     int
	}{
		{"queueDatas", len(data.QueueDatas)},
		{"brokerDatas", len(data.BrokerDatas)},
		{"topicQueueMappingByBroker", len(data.TopicQueueMappingByBroker)},
	} {
		if l.n > MaxBrokerEntries {
			return &Error{Topic: topic, Field: l.field, Value: strconv.Itoa(l.n) + " entries",
				Reason: "are more than the bound of " + strconv.Itoa(MaxBrokerEntries) + " entries (route.MaxBrokerEntries)"}
		}
	}
	return nil
}

// parseOrderConf reads "brokerA:4;brokerB:4" as the reference does: entries
// split on ';' and fields on ':' (trailing empty pieces dropped, as Java's
// String.split drops them), the count is the second field, parsed as a Java int.
func parseOrderConf(topic, conf string) ([]MessageQueue, error) {
	bad := func(entry, reason string) error {
		return &Error{Topic: topic, Field: "orderTopicConf", Value: conf, Reason: "entry " + strconv.Quote(entry) + " " + reason}
	}
	type share struct {
		broker string
		nums   int
	}
	var shares []share
	total := 0
	for _, entry := range javaSplit(conf, ";") {
		item := javaSplit(entry, ":")
		if len(item) < 2 {
			return nil, bad(entry, "is not broker:count")
		}
		if item[0] == "" {
			return nil, bad(entry, "has an empty broker name")
		}
		nums, err := parseJavaInt(item[1])
		if err != nil {
			return nil, bad(entry, "has a count that is not a number")
		}
		if nums < 0 || nums > MaxQueuesPerBroker {
			return nil, bad(entry, "has a count outside 0.."+strconv.Itoa(MaxQueuesPerBroker))
		}
		if total += int(nums); total > maxQueues {
			return nil, bad(entry, "brings the topic over "+strconv.Itoa(maxQueues)+" queues")
		}
		shares = append(shares, share{item[0], int(nums)})
	}
	queues := make([]MessageQueue, 0, total)
	for _, sh := range shares {
		for i := range sh.nums {
			queues = append(queues, MessageQueue{Topic: topic, BrokerName: sh.broker, QueueID: i})
		}
	}
	return queues, nil
}

// javaSplit splits s on sep and drops trailing empty strings, as Java's
// String.split(regex) does for a literal separator. An empty s yields [""].
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 1 && parts[0] == "" && s != "" {
		return nil // s was only separators: Java yields an empty array
	}
	return parts
}

// parseJavaInt parses a decimal int32 as Java's Integer.parseInt does: an
// optional sign, then ASCII digits.
func parseJavaInt(s string) (int32, error) {
	if s == "" || s == "+" || s == "-" {
		return 0, strconv.ErrSyntax
	}
	for i, c := range s {
		if (c == '+' || c == '-') && i == 0 {
			continue
		}
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, strconv.ErrRange
	}
	return int32(v), nil
}

// MockBrokerName is the broker name the reference gives a static topic's
// logical queues in scope (TopicQueueMappingUtils.getMockBrokerName).
func MockBrokerName(scope string) string {
	if scope == GlobalScope {
		return LogicalQueueBrokerPrefix + scope[2:]
	}
	return LogicalQueueBrokerPrefix + scope
}

// staticQueues lists a static topic's logical queues as the reference does
// (ClientMetadata.topicRouteData2EndpointsForStaticTopic): per scope, queue ids
// 0..max-1 where max is the largest TotalQueues among that scope's mappings
// whose epoch is at least -1 (the reference compares against a running
// maximum epoch it never raises from -1). The reference collects the queues
// in a map keyed by queue, so two scopes with the same mock broker name
// ("__global__" and "global__") yield each queue once.
func staticQueues(topic string, mappings map[string]TopicQueueMappingInfo) ([]MessageQueue, error) {
	totals := make(map[string]int) // mock broker name -> queue count
	for broker, info := range mappings {
		if info.Scope == nil {
			continue
		}
		if info.TotalQueues > MaxQueuesPerBroker {
			return nil, &Error{Topic: topic, Field: "topicQueueMappingByBroker[" + broker + "].totalQueues",
				Value: strconv.Itoa(info.TotalQueues), Reason: "is over " + strconv.Itoa(MaxQueuesPerBroker)}
		}
		name := MockBrokerName(*info.Scope)
		if info.Epoch >= -1 && info.TotalQueues > totals[name] {
			totals[name] = info.TotalQueues
		}
	}
	sum := 0
	for _, total := range totals {
		sum += total
	}
	if sum > maxQueues {
		return nil, &Error{Topic: topic, Field: "topicQueueMappingByBroker", Value: strconv.Itoa(len(totals)) + " scopes",
			Reason: "bring the topic over " + strconv.Itoa(maxQueues) + " queues"}
	}
	queues := make([]MessageQueue, 0, sum)
	for name, total := range totals {
		for i := range total {
			queues = append(queues, MessageQueue{Topic: topic, BrokerName: name, QueueID: i})
		}
	}
	slices.SortFunc(queues, func(a, b MessageQueue) int {
		if c := cmp.Compare(a.QueueID, b.QueueID); c != 0 {
			return c
		}
		return strings.Compare(a.BrokerName, b.BrokerName)
	})
	return queues, nil
}
