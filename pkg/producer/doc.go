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
//   - Drive is one send as a pure step function (no clock reads, no
//     goroutines): pick, attempt, report, decide. Its Loop keeps the
//     decisions (which pick, what budget is left, which outcome to report on
//     which path, retry or stop) and says how the send went. Producer drives
//     it with a blocking Transport; the simulator and the trace runner drive
//     the same Drive in virtual time.
//   - Classify turns a Transport's answer into an Outcome carrying one
//     latency.Class, the vocabulary the send loop's rules, the fault table,
//     the metrics and the logs share (Outcome.Report is what a pick's Done
//     takes); SendError,
//     RouteError, ClientError, TransportError and BrokerError are the errors,
//     for errors.Is and errors.As.
//   - Observer is the hook for metrics.
//
// Reading the code, in this order:
//
//   - producer.go (Producer, New and its options, SendSync, SendOneway,
//     the ordered sends and Close), async.go (SendAsync and its bound on
//     sends in flight), config.go (Config, its presets and checks, and
//     Policy: a Config bound to a mode), message.go (Message, Kind,
//     SendStatus, Result);
//   - transport.go (Transport, RouteSource, StaticRoutes, Selector and
//     HashSelector: what a user supplies) and strategy.go (Strategy: what
//     the producer needs of its selector, and RoomModel: what the send loop
//     asks a strategy's capacity model);
//   - drive.go (Drive: one send's pick, attempt, report, decide) and
//     loop.go (Loop: the budget, retry and result decisions, with the rules
//     for sync, oneway and async sends, the no-room rule and waiting for
//     room), moderules.go (each mode's rules per outcome class, built from
//     latency's send rules), retrybudget.go (the retry budget a Policy
//     shares among its sends), roomwait.go (the room-wait allowance a
//     Policy shares among its sync sends, and how it tells whether waiting
//     relieves the push-back);
//   - errors.go (Outcome, Classify and the error types), panic.go (a
//     collaborator's panic as an error);
//   - routes.go (the route cache: lookups, refreshes, route changes told to
//     the strategy), attemptctx.go (the recycled contexts attempts give
//     their Transport), observer.go (Observer: the hook for metrics);
//   - the tests: example_test.go (the examples: New, SendSync, Drive),
//     paths_test.go (the table of every selection and exception path and
//     the test that drives it on the generated mocks), loop_test.go (the
//     Loop's rules, step by step), roomrule_test.go (the no-room rule on
//     the mocks).
//
// Delivery is at least once: an attempt that timed out may have been stored
// by its broker before the send is retried on another, so a message can be
// stored twice. Every send ends in exactly one result or one error; every
// accepted async send in exactly one callback.
//
// Ordered sends (SendToQueue, SendByKey) bypass the strategy and are never
// retried, because a retry on another queue would reorder them.
package producer
