// Package route holds what a producer knows about where a topic's messages can
// go: the route data a name server returns (queue data, broker data, static-topic
// queue mappings), its conversion to a publish info (the ordered list of message
// queues a producer picks from), the Java-compatible round-robin index, and the
// three picks RocketMQ's TopicPublishInfo makes over that list: the filtered pick,
// the unfiltered pick and the "avoid the last broker" pick.
//
// Start with [NewPublishInfo] (route data in, publish info out) and
// [PublishInfo.Select]. The fault-tolerant strategy that chooses among these
// picks lives in package latency.
//
// A PublishInfo is immutable apart from its index, so it is safe for concurrent
// use; routes change by building a new PublishInfo and swapping it in.
package route
