// Package route holds what a producer knows about where a topic's messages can
// go: the route data a name server returns (queue data, broker data, static-topic
// queue mappings), its conversion to a publish info (the ordered list of message
// queues a producer picks from) and the Java-compatible round-robin index the
// picks move.
//
// Start with [NewPublishInfo] (route data in, publish info out). The picks over
// a publish info (RocketMQ's TopicPublishInfo picks and the fault-tolerant
// cascade built on them) live in package latency: latency.Strategy.Select and
// latency.SelectAvoiding.
//
// A PublishInfo is immutable apart from its index, so it is safe for concurrent
// use; routes change by building a new PublishInfo and swapping it in.
package route
