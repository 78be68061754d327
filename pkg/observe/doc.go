// Package observe watches an mqfault producer without slowing it down: a
// log/slog adapter for the strategy's and the producer's events, rate-limited
// per broker so a broker that stays down does not flood the log
// (NewLogger); a read-only http.Handler that serves the fault table as JSON
// (NewTableHandler); and JoinLatency and JoinProducer, which fan events out to
// several observers. Prometheus metrics are in the subpackage prom, so only
// programs that import it depend on client_golang.
//
// None of it runs on the pick path: latency.Observer methods are called from
// fault updates, expiry timers and detector rounds, producer.Observer methods
// after each attempt and send. Counting picks by cascade stage is the
// strategy's own latency.StageCounter, one atomic add per pick.
package observe
