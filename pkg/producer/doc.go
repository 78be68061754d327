// Package producer is the send loop: it sends messages through a
// user-supplied Transport, picks every attempt's queue with a Strategy (a
// *latency.Strategy, or any selector of that small interface), and reports
// every attempt's outcome back through its pick (latency.Pick.Done, where
// the strategy applies its mode's fault-update rules), with the retries and
// budgets of RocketMQ's producer (5.3.3, or 4.9.8 with a v4 strategy).
//
// Start with New and Producer.SendSync. The pieces:
//
//   - Transport (Send one Attempt) and RouteSource (Lookup a topic's route)
//     are what a user supplies; StaticRoutes is a RouteSource for routes set
//     in code. Transport's documentation says which error to return when.
//   - Strategy is what the producer needs of its selector: Select (a pick
//     that can report back), Mode, RouteChanged and RouteRemoved.
//   - Loop is the decision state of one send as a pure step function (no
//     clock reads, no goroutines): which pick, what budget is left, which
//     outcome to report on which path, retry or stop. Drive joins it to a
//     Strategy: pick, attempt, report, decide. Producer drives it with a
//     blocking Transport; the simulator and the trace runner drive the same
//     Drive in virtual time.
//   - Classify turns a Transport's answer into an Outcome carrying one
//     latency.Class, the vocabulary the send loop's rules, the fault table,
//     the metrics and the logs share (Outcome.Report is what a pick's Done
//     takes); SendError,
//     RouteError, ClientError, TransportError and BrokerError are the errors,
//     for errors.Is and errors.As.
//   - Observer is the hook for metrics.
//
// Delivery is at least once: an attempt that timed out may have been stored
// by its broker before the send is retried on another, so a message can be
// stored twice. Every send ends in exactly one result or one error; every
// accepted async send in exactly one callback.
//
// Ordered sends (SendToQueue, SendByKey) bypass the strategy and are never
// retried, because a retry on another queue would reorder them.
package producer
