// Package sim is a deterministic discrete-event simulator of a producer
// sending to brokers that fail, slow down or push back. It runs the real
// code: the latency.Strategy (its cascade, fault table, isolation expiry
// timers and detector rounds) and the send loop's shared step
// (producer.Drive: the Loop's retries and budgets, the outcome reported
// through the pick to the strategy's update rules), on a
// clock.Manual that only the simulation moves. `mqfault sim` is its
// command line.
//
// Start with Run (a Scenario in, a Report out), DefaultScenario or Parse
// (YAML scenarios, see Parse for the shape), Strategies (the built-in
// contenders: off, v4, v5, v5+detector, mqfault) and AblationStrategies (the
// mqfault preset with one of its policies switched off, for each it has on;
// Ablations is the table).
//
// # The model
//
// A run has one event queue ordered by virtual time, ties broken by the
// order in which events were scheduled, so one seed gives one run.
//
//   - A closed load (the default, Scenario.Load LoadClosed): senders are
//     simulated producer threads. Each sends synchronously, one send after
//     another, starting a send every Senders/Rate seconds, or when its
//     previous send ends if that is later; it never catches up on sends it
//     missed while waiting. Slow sends therefore lower the number of sends,
//     as they would in a real producer.
//   - An open load (LoadOpen): sends start as a Poisson process at Rate
//     (exponential gaps from a stream of their own, the same in every
//     strategy), whatever happened to earlier sends, so slow sends and
//     retries pile up in flight instead of slowing the traffic down. At
//     most MaxInFlight sends are in flight; an arrival past that is shed
//     (failed at once, counted in Result.Shed).
//   - A send is a producer.Drive stepped per event: Next, then Start (the
//     strategy's pick at the virtual now), then the attempt, whose outcome
//     arrives as an event after its elapsed time; Finish reports it through
//     the pick (the strategy's rules make the fault update; a busy answer's
//     code and remark reach it in latency.Outcome) and decides whether to
//     retry — the same helper the producer and the trace runner drive.
//   - An attempt meets its broker's state at the moment it starts: up (a
//     log-normal latency through the broker's median and p99), down
//     (connection refused after 1 ms), blackhole (no answer: the attempt
//     runs into its Plan.Timeout), slow (the event's latency), busy (the
//     event's code at the event's rate), flapping (down for the first half
//     of each period, up for the second), stall (for Length of every
//     Period the store serves nothing: a send waits for the stall's end in
//     the send queue, or past its queue_wait, RocketMQ's 200 ms without one,
//     is answered SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] with the few sends
//     queued ahead of it; past its first second a stall is page cache
//     busy: the sends queued then are answered [PCBUSY_CLEAN_QUEUE] at once,
//     later ones [REJECTREQUEST] at once). A broker with a capacity answers
//     SYSTEM_BUSY (code 2, remark [OVERLOAD]) beyond it (a token bucket
//     of 50 ms worth of sends, at least 200); with a queue_wait it queues instead:
//     RocketMQ's send queue, served first in, first out at Capacity sends a
//     second, a send's latency growing by its wait, and a send that would
//     wait longer than QueueWait answered SYSTEM_BUSY
//     ([TIMEOUT_CLEAN_QUEUE]) after waiting QueueWait. An answer later than the attempt's timeout is a timeout. A
//     timeout is seen 1 ms after its deadline, as a real timer fires a
//     little late.
//   - Detector: for strategies with one, a round (Strategy.DetectRound) runs
//     every DetectPeriod of virtual time while the detector switch is on.
//     Its probes answer at once from the broker's state at that moment:
//     down and blackhole are unreachable (a blackhole's probe returns the
//     timeout error at once instead of waiting for it), up, slow and busy
//     reachable; an event may force the answer (Event.Probe). Probes take
//     no virtual time.
//   - Route changes (a gone event, Broker.Joins): each producer polls the
//     name server's route every RoutePoll from a phase drawn from the seed
//     and takes a route that changed (a new publish info, told to its
//     strategy through RouteChanged); sends in flight keep their route.
//   - A fleet (Scenario.Producers above 1): that many producers, each with
//     its own latency strategy (fault table, timers, detector), policy
//     (retry budget) and publish info, share the run's brokers and clock;
//     the senders (closed load) or arrivals (open load) are split among
//     them. Result adds their counts up and Result.Fleet holds the herding
//     figure.
//
// # What a run records
//
// Per strategy (Result): counts, latency percentiles, per-broker attempts,
// retries, retries a retry budget refused, busy answers (and under an open
// load the sends shed and those in flight when the duration ran out), a
// Series per second of virtual time (sends started, failed sends, retries,
// busy answers, p99, attempts per broker) and a Timeline per broker: the spans its fault table
// held it isolated or unreachable, sampled after every fault update, on
// every isolation expiry and on every probe that changed its reachability
// (through Env.Observer), never on the pick path. Package
// github.com/mqfault/mqfault/pkg/sim/report draws them (pkg/sim itself does
// not depend on its charting library); a Strategy.New that sets an observer of its own joins it with
// Env.Observer (observe.JoinLatency), or the timeline misses the releases.
//
// Each strategy runs in its own goroutine with its own clock, brokers and
// random sources seeded from the scenario's seed, so strategies run
// concurrently and their results do not depend on each other. An attempt's
// random draws (the normal variate of its latency, a busy broker's coin)
// follow from a hash of the seed, the sender, the sender's send number and
// the attempt's draw number in the send (an attempt that meets a down or
// blackholed broker draws nothing): common random numbers, so strategies
// that make the same send to equally healthy brokers meet the same latency,
// and their results differ by their decisions, not by sampling noise.
//
// # Adding a strategy
//
// Append a Strategy to the list Strategies returns (strategy.go): a name,
// a summary, a latency.Config and a producer.Config; set Strategy.New when the
// latency strategy needs more than its Config and the Env's options. Then
// rerun the golden tests with -update and review the new rows.
package sim
