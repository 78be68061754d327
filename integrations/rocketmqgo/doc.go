// Package rocketmqgo gives producers of the official Go client,
// github.com/apache/rocketmq-client-go/v2, mqfault's latency fault tolerance:
// every send runs mqfault's send loop (pkg/producer), which picks each
// attempt's queue with a latency.Strategy, isolates brokers that fail or answer
// slowly, and retries on another broker within the send's time budget.
//
// Start with NewProducer: it takes the client's own options and returns a
// *Producer, which is a rocketmq.Producer. Under it the client's producer
// runs with producer.WithRetry(0), so each client call is exactly one
// attempt, and with a queue selector that answers each attempt with the queue
// the strategy picked for it. README.md beside this file says what changes
// for a user of the client and what stays untouched.
//
// The settings come from WithConfig (a config.Config from config.Load: a
// file and MQFAULT_ variables) or, in code, WithStrategyConfig and
// WithSendConfig. WithLogger and WithMetrics give the slog records and the
// Prometheus metrics package wire's injectors give (pkg/observe/setup
// derives both): isolations, their ends, probe verdicts, failed attempts.
//
// The pieces, in the order a send meets them:
//
//   - Producer validates the messages and decides the path: a message with a
//     sharding key, or with Queue set, goes straight to the client (one call,
//     the client's own key → queue rule or the queue as set); every other
//     message goes through the fault-tolerant send loop.
//   - The loop asks a RouteSource for the topic's queues. Ours learns them
//     from the client itself: the list the client hands the queue selector on
//     every send, and, for a topic not seen yet, a route probe (a client call
//     whose selector answers nil, so nothing is sent). The learnt route has
//     each queue of the list once and leaves out entries no route can have
//     (an empty broker name, a queue id over route.MaxQueuesPerBroker),
//     logging and counting them (Producer.RouteDrops).
//   - Each attempt is one Client.SendSync or SendOneWay call; the selector
//     finds the attempt's queue through a per-message slot, and the client's
//     error is mapped to the loop's typed errors (see the Transport contract
//     in pkg/producer).
//   - An interceptor learns broker addresses from the send context
//     (primitive.GetProducerCtx), which the strategy's detector probes with
//     RemotingDetector: a GET_MAX_OFFSET request the broker must answer, as
//     RocketMQ 5.x's detector asks (a stopped broker's kernel still accepts
//     TCP connections). An address several brokers share (a 5.x proxy) is
//     logged once and never probed.
//   - The first NewProducer sets the client's panic handler, chained to one
//     set before, so a panic in a client goroutine (v2.1.2 panics on a
//     frame with a negative length) no longer ends the process
//     (WithoutPanicHandler opts out).
//
// Client is the narrow interface over the client calls the wrapper makes;
// tests mock it (package mocks).
package rocketmqgo
