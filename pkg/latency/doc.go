// Package latency decides which message queue each send attempt of a
// producer goes to, as RocketMQ's producer "latency fault tolerance" does
// (MQFaultStrategy, LatencyFaultTolerance), and remembers what each attempt
// found about its broker.
//
// Start with [NewStrategy] and a [Config]: [Reference5] and [Reference4]
// decide exactly as RocketMQ 5.3.3 and 4.9.8 do, [DefaultConfig] is the
// mqfault preset with the policies past the reference on. Then, per send
// attempt, [Strategy.Select] picks a queue of a route (a route.PublishInfo)
// and returns a [Pick]; the attempt reports what it met through that pick,
// [Pick.Done] with an [Outcome] (its class, path, code and latency). That is
// the seam between the pick and the send loop: the mode's rules
// ([UpdateFor], outcome.go) and the policies turn the outcome into a fault
// update, so a caller never decides isolation times. [Strategy.Update] is the
// raw update underneath, kept for the trace language. Package producer's
// Strategy interface is what a send loop needs of a strategy, and its Drive
// runs pick, attempt, Done and retry.
//
// [Strategy.Start] runs the detector, which probes isolated brokers through a
// [probe.Resolver] and a [probe.ServiceDetector] ([WithResolver],
// [WithServiceDetector]); [Strategy.Close] stops it.
//
// The state lives in a [FaultTable] ([Strategy.Table]): per broker its last
// latency, until when it is isolated and whether it is reachable. What a mode
// changes (the cascade of stages a pick goes through, the update rules, the duration
// table) is chosen once when the strategy is built; [Stage] names the stages
// and a [StageCounter] counts picks by the stage that answered.
//
// Everything on the pick and update paths is safe for concurrent use, never
// blocks on I/O and allocates nothing once a route has been seen; only the
// detector runs goroutines, and Close waits for them.
//
// Reading the code, in this order:
//
//   - strategy.go (the Strategy, its options and Update) and config.go (the
//     Config, its presets and checks); mode.go (the registry of modes:
//     everything a mode decides is its spec), mode5.go and mode4.go (each
//     mode's spec, outcome rules and send-loop rules);
//   - pick.go (the pick's types, Release and the shared cursor), outcome.go
//     (outcomes, Pick.Done and how the mode's outcome rules apply);
//   - binding.go (what a strategy derives from a route), cascade5.go and
//     cascade4.go (each mode's cascade), routeview.go (how a pick skips what
//     a pass would refuse), routes.go and routebrokers.go (route changes, and
//     which brokers' items the table drops);
//   - table.go (the fault table, its slots and the picks' slot handles),
//     leastbad.go (v4's least-bad broker), durations.go (the duration
//     tables);
//   - policy.go (the registry of the policies past the reference and their
//     hooks), then each policy's file: isolationcap.go, backoff.go,
//     recovery.go, capacity.go (the capacity model);
//     POLICIES.md says why each is there and what it measured;
//   - detector.go (the detector: rounds of probes of isolated brokers; the
//     probe contract it calls, ServiceDetector, is package probe's, and
//     probetest checks a ServiceDetector against it);
//   - observer.go (what a strategy reports), stagecount.go (picks counted by
//     stage), errors.go (configuration errors); the clocks are package
//     clock's, a leaf package as package probe is.
package latency
