package route

// Permission bits of a topic's queue data on a broker (RocketMQ PermName).
const (
	PermInherit  = 1 << 0
	PermWrite    = 1 << 1
	PermRead     = 1 << 2
	PermPriority = 1 << 3
)

// Writable reports whether perm lets producers send (perm & PermWrite).
func Writable(perm int) bool { return perm&PermWrite == PermWrite }

// Readable reports whether perm lets consumers read (perm & PermRead).
func Readable(perm int) bool { return perm&PermRead == PermRead }

// MasterID is the broker id of a master in BrokerData.BrokerAddrs.
const MasterID int64 = 0

// Names the reference gives static-topic logical queues (MixAll).
const (
	// LogicalQueueBrokerPrefix starts the broker name of every logical queue of
	// a static topic; the scope follows it.
	LogicalQueueBrokerPrefix = "__syslo__"
	// GlobalScope is the scope of a static topic mapped across the cluster.
	GlobalScope = "__global__"
)

// TopicRouteData is what a name server answers for one topic: which brokers
// hold its queues, where those brokers are, and, for static topics, how the
// logical queues map onto brokers.
type TopicRouteData struct {
	// OrderTopicConf, when set and non-empty, lists the topic's queues in order
	// as "brokerA:4;brokerB:4" and makes the topic ordered. A nil pointer is
	// the reference's null, which is not the same as an empty string: only a
	// nil OrderTopicConf lets a static-topic mapping take effect.
	OrderTopicConf *string
	QueueDatas     []QueueData
	BrokerDatas    []BrokerData
	// TopicQueueMappingByBroker maps a broker name to its part of a static
	// topic's queue mapping.
	TopicQueueMappingByBroker map[string]TopicQueueMappingInfo
}

// QueueData is one broker's share of a topic.
type QueueData struct {
	BrokerName     string
	ReadQueueNums  int
	WriteQueueNums int
	Perm           int
	TopicSysFlag   int
}

// BrokerData is one broker (a master and its slaves) and its addresses by
// broker id; id MasterID is the master.
type BrokerData struct {
	Cluster     string
	BrokerName  string
	BrokerAddrs map[int64]string
}

// MasterAddr returns the master's address, if the broker has one.
func (b BrokerData) MasterAddr() (string, bool) {
	a, ok := b.BrokerAddrs[MasterID]
	return a, ok
}

// TopicQueueMappingInfo is one broker's view of a static topic: the scope it
// belongs to, the topic's total logical queues, the mapping's epoch, and which
// global (logical) queue ids the broker currently serves.
type TopicQueueMappingInfo struct {
	Topic string
	// Scope is the mapping's scope. nil is the reference's null: the mapping
	// then yields no queues. Java's default, when route data leaves the field
	// out, is GlobalScope, so a decoder of Java-style route data must set
	// GlobalScope for a missing field and nil only for an explicit null.
	Scope       *string
	TotalQueues int
	BrokerName  string
	Epoch       int64
	Dirty       bool
	// CurrIDMap maps a global queue id to the broker's physical queue id.
	CurrIDMap map[int]int
}

// Str returns a pointer to s, for OrderTopicConf and Scope literals.
func Str(s string) *string { return &s }
