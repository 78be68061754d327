// Package brokerprobe asks a RocketMQ broker a question over its remoting
// protocol: one GET_MAX_OFFSET request (code 30) for a queue of a topic, on
// a connection of its own, and counts the broker reachable only when a
// well-formed SUCCESS answer comes back before the probe's deadline. It is
// the detector of rocketmqgo (rocketmqgo.RemotingDetector) and of the
// rocketmq-detector plugin, and has no dependency on rocketmq-client-go.
package brokerprobe
