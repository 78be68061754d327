// Package remotingtest runs loopback stand-ins for a RocketMQ name server and
// brokers, speaking enough of the RocketMQ remoting protocol for the real
// apache/rocketmq-client-go v2 producer to run against them unmodified.
//
// It is test support: every server listens on 127.0.0.1 with a port the
// kernel picks, keeps a log of every request it read (see Request), and is
// stopped with Close, which closes its listener and connections and waits
// for every goroutine it started.
//
// Start reading at NameServer (route lookups, with routes set and changed at
// run time through SetRoute) and Broker (send message v1/v2/batch, heartbeat,
// unregister client, and per-broker faults: SetFault for slow, dropped or
// coded answers, Refuse and Resume for refused connections). README.md
// beside this file lists the protocol commands spoken and those that are not.
package remotingtest
