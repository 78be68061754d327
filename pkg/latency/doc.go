// Package latency decides which message queue each send attempt of a
// producer goes to, as RocketMQ's producer "latency fault tolerance" does
// (MQFaultStrategy, LatencyFaultTolerance), and remembers what each attempt
// found about its broker.
//
// Build a [Strategy] with [NewStrategy] and a [Config]: [Reference5] and
// [Reference4] decide exactly as RocketMQ 5.3.3 and 4.9.8 do, [DefaultConfig]
// is the mqfault preset with the policies past the reference on. Per send
// attempt, [Strategy.Select] returns a [Pick], and the attempt reports what it
// met through it ([Pick.Done] with an [Outcome]); the mode's rules
// ([UpdateFor]) and the policies turn the outcome into a fault update, so a
// caller never decides isolation times ([Strategy.Update], the raw update, is
// kept for the trace language). Package producer's Drive runs pick, attempt,
// Done and retry. [Strategy.Start] runs the detector, which probes isolated
// brokers ([WithResolver], [WithServiceDetector]); [Strategy.Close] stops it.
// The state lives in a [FaultTable]; a [StageCounter] counts picks by [Stage].
//
// The pick and update paths are safe for concurrent use, never block on I/O
// and allocate nothing once a route has been seen; only the detector runs
// goroutines, and Close waits for them.
//
// Reading the code, in this order:
//
//   - strategy.go (the Strategy, its options, Update), config.go (the Config,
//     presets, checks); mode.go (the registry of modes), mode5.go and mode4.go
//     (each mode's spec: outcome and send-loop rules);
//   - pick.go (the pick, Release, the shared cursor), outcome.go (outcomes,
//     Pick.Done, the outcome rules);
//   - binding.go (what a strategy derives from a route), cascade5.go and
//     cascade4.go (each mode's cascade), routeview.go (how a pick skips what
//     a pass would refuse), routes.go and routebrokers.go (route changes, and
//     which brokers' items the table drops);
//   - table.go (the fault table, its slots, the picks' slot handles),
//     leastbad.go (v4's least-bad broker), durations.go (duration tables);
//   - policy.go (the registry of the policies past the reference, their
//     hooks), then each policy's file: isolationcap.go, backoff.go,
//     recovery.go, trial.go (the send trial), capacity.go (the capacity
//     model's weights; capacityoutcome.go, what outcomes do to them and to
//     the table; share.go, how they move picks; roomcache.go, which
//     brokers the first stage takes have room) and stall.go (its stalled
//     brokers); POLICIES.md says why each is there and what it measured;
//   - detector.go (rounds of probes of isolated brokers; the probe contract,
//     ServiceDetector, is package probe's, checked by probetest);
//   - observer.go (what a strategy reports), stagecount.go (picks counted by
//     stage), errors.go (configuration errors); the clocks are package
//     clock's, a leaf package as package probe is.
package latency
