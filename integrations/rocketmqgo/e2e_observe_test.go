package rocketmqgo_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// record is what recorder keeps of one slog record.
type record struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// recorder is a slog.Handler, enabled at every level, that keeps every
// record.
type recorder struct {
	mu   sync.Mutex
	recs []record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	out := record{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		out.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, out)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// find returns the records with message msg about broker.
func (r *recorder) find(msg, broker string) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []record
	for _, rec := range r.recs {
		if rec.msg == msg && rec.attrs["broker"] == broker {
			out = append(out, rec)
		}
	}
	return out
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, rec := range r.recs {
		b.WriteString(rec.level.String() + " " + rec.msg)
		keys := make([]string, 0, len(rec.attrs))
		for k := range rec.attrs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b.WriteString(" " + k + "=" + rec.attrs[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// series sums the samples of family name whose labels include every one of
// labels (counters and gauges), and says whether there was any.
func series(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	sum, found := 0.0, false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			found = true
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			} else {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum, found
}

// TestE2EConfigLogsMetrics builds the producer with a configuration file
// (WithConfig of config.LoadEnv), a logger enabled at Debug (WithLogger) and
// a Prometheus registry (WithMetrics), and hangs a broker as
// TestE2EHungBroker does:
//
//  1. the attempt that reaches the hung broker times out and is retried on
//     the other: the logger records the failed attempt (Info) and the
//     isolation (Warn, reason failure); the registry counts both, labelled
//     producer="orders";
//  2. a detector round while it is hung: the probe's verdict, unreachable, is
//     recorded (Warn "probe failed") and counted;
//  3. it answers again: a round finds it reachable (Info "broker reachable
//     again"), and when its isolation ends that is recorded too (Info);
//  4. the file's log_interval 0s is in force: every isolation event is a
//     record, as many as the registry counts; Shutdown unregisters the
//     metrics.
func TestE2EConfigLogsMetrics(t *testing.T) {
	// detect_period 1h: the background loop's rounds never come, only the
	// test's (the clock moves by less than that).
	path := filepath.Join(t.TempDir(), "mqfault.yaml")
	if err := os.WriteFile(path, []byte("preset: default\nlog_interval: 0s\ndetect_period: 1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadEnv(path, nil)
	if err != nil {
		t.Fatalf("LoadEnv() error = %v", err)
	}
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	c := newServers(t, []string{"broker-a", "broker-b"})
	c.p = c.newProducer(nil, rocketmqgo.WithConfig(cfg), rocketmqgo.WithLogger(slog.New(rec)), rocketmqgo.WithMetrics(reg, "orders"))
	b := c.brokers["broker-b"]
	msgs := c.sendN(8)
	if err := b.SetFault(remotingtest.Fault{Hung: true}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}

	// 1. The held attempt: failed attempt and isolation.
	more, held := c.hangUntilHeld(b, 100)
	msgs = append(msgs, more...)
	orders := func(labels map[string]string) map[string]string {
		labels["producer"] = "orders"
		return labels
	}
	isolated := rec.find("mqfault: broker isolated", "broker-b")
	if len(isolated) == 0 || isolated[0].level != slog.LevelWarn || isolated[0].attrs["reason"] != "failure" {
		t.Fatalf("isolation records of broker-b = %+v, want one at WARN, reason failure; the log:\n%s", isolated, rec)
	}
	failed := rec.find("mqfault: send attempt failed", "broker-b")
	if len(failed) == 0 || failed[0].level != slog.LevelInfo {
		t.Errorf("failed-attempt records of broker-b = %+v, want one at INFO; the log:\n%s", failed, rec)
	}
	if n, _ := series(t, reg, "mqfault_isolations_total", orders(map[string]string{"broker": "broker-b", "reason": "failure"})); n != 1 {
		t.Errorf(`mqfault_isolations_total{broker="broker-b",reason="failure",producer="orders"} = %v, want 1`, n)
	}
	answered := latency.ClassAnswered.String()
	all, _ := series(t, reg, "mqfault_attempts_total", orders(map[string]string{"broker": "broker-b"}))
	ok, _ := series(t, reg, "mqfault_attempts_total", orders(map[string]string{"broker": "broker-b", "outcome": answered}))
	if int(all-ok) != len(failed) || len(failed) == 0 {
		t.Errorf("mqfault_attempts_total of broker-b: %v not answered, want %d (the failed-attempt records)", all-ok, len(failed))
	}
	if n, _ := series(t, reg, "mqfault_attempts_total", orders(map[string]string{"outcome": answered})); int(n) != len(msgs) {
		t.Errorf("answered attempts = %v, want %d (one per message sent)", n, len(msgs))
	}
	if n, _ := series(t, reg, "mqfault_sends_total", orders(map[string]string{"kind": strings.ToLower(mqproducer.KindSync.String()), "result": mqproducer.StopAnswered.String()})); int(n) != len(msgs) {
		t.Errorf("answered sync sends = %v, want %d", n, len(msgs))
	}
	if n, _ := series(t, reg, "mqfault_isolated_brokers", orders(map[string]string{})); n != 1 {
		t.Errorf("mqfault_isolated_brokers = %v, want 1 (read from the producer's fault table)", n)
	}

	// 2. A round while hung: the probe's verdict is unreachable.
	c.round()
	probed := rec.find("mqfault: probe failed", "broker-b")
	if len(probed) == 0 || probed[0].level != slog.LevelWarn || probed[0].attrs["addr"] != b.Addr() {
		t.Errorf("probe-failed records of broker-b = %+v, want one at WARN naming %s; the log:\n%s", probed, b.Addr(), rec)
	}
	if n, _ := series(t, reg, "mqfault_probes_total", orders(map[string]string{"result": "unreachable"})); n < 1 {
		t.Errorf(`mqfault_probes_total{result="unreachable"} = %v, want at least 1`, n)
	}

	// 3. It answers again: reachable, then its isolation ends.
	if err := b.SetFault(remotingtest.Fault{}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	for i := 0; len(rec.find("mqfault: broker reachable again", "broker-b")) == 0; i++ {
		if i == 4 {
			t.Fatalf("no reachable-again record of broker-b after 4 rounds since it answers; the log:\n%s", rec)
		}
		c.round()
	}
	if r := rec.find("mqfault: broker reachable again", "broker-b"); r[0].level != slog.LevelInfo {
		t.Errorf("reachable-again record at %v, want INFO", r[0].level)
	}
	if n, _ := series(t, reg, "mqfault_probes_total", orders(map[string]string{"result": "reachable"})); n < 1 {
		t.Errorf(`mqfault_probes_total{result="reachable"} = %v, want at least 1`, n)
	}
	until := held.Time.Add(mqproducer.DefaultConfig().MaxTimeoutPerRequest + c.isolation(0, true))
	msgs = append(msgs, c.healAt(b, until, 8)...)
	ended := rec.find("mqfault: broker isolation ended", "broker-b")
	if len(ended) != 1 || ended[0].level != slog.LevelInfo {
		t.Errorf("isolation-ended records of broker-b = %+v, want one at INFO; the log:\n%s", ended, rec)
	}
	if n, _ := series(t, reg, "mqfault_isolations_ended_total", orders(map[string]string{"broker": "broker-b"})); n != 1 {
		t.Errorf("mqfault_isolations_ended_total of broker-b = %v, want 1", n)
	}

	// 4. log_interval 0s: one record per isolation event.
	begun, _ := series(t, reg, "mqfault_isolations_total", orders(map[string]string{"broker": "broker-b"}))
	extended, _ := series(t, reg, "mqfault_isolation_extensions_total", orders(map[string]string{"broker": "broker-b"}))
	if n := len(rec.find("mqfault: broker isolated", "broker-b")); float64(n) != begun+extended {
		t.Errorf("%d isolation records of broker-b, the registry counts %v begun and %v extended; want them equal (log_interval 0s)", n, begun, extended)
	}
	c.checkNothingLost(msgs)
	t.Logf("the log:\n%s", rec)
	if err := c.p.Shutdown(); err != nil {
		t.Fatalf("Shutdown() error = %v", err)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("%d metric families left after Shutdown, want 0", len(mfs))
	}
}
