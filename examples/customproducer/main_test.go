package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the example's test if anything it started outlives run: the
// brokers, the transport's connections, the HTTP server, the producer and the
// detector.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRun runs the example, shortened, and checks what it is there to show:
//  1. the slow broker and the dead broker are isolated, and the output says so;
//  2. in the second half of the run the healthy broker carries the traffic;
//  3. /metrics was served on 127.0.0.1 and counted the isolations as the
//     summary does, for both producers sharing the registry;
//  4. nothing is printed after the summary.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real brokers for 5 s")
	}
	var out bytes.Buffer
	res, err := run(context.Background(), options{
		Duration:  5 * time.Second,
		DeadAfter: time.Second,
		SlowDelay: 600 * time.Millisecond,
		Senders:   4,
		Interval:  5 * time.Millisecond,
		Environ:   nil, // DefaultConfig, whatever the test's environment says
	}, &out)
	if err != nil {
		t.Fatalf("run() error = %v\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	// 4. Nothing is printed after the summary: the strategy's observer is
	// silent once the injector's cleanup has closed it.
	if _, after, ok := strings.Cut(out.String(), "\nsummary"); !ok {
		t.Error("the output has no summary")
	} else if strings.Contains(after, "t=") {
		t.Errorf("a line was printed after the summary began:\n%s", after)
	}

	for _, b := range []string{slow, dead} {
		if res.Brokers[b].Isolations == 0 {
			t.Errorf("broker %s: isolations = 0, want at least 1", b)
		}
		if !strings.Contains(out.String(), b+"  isolated for") {
			t.Errorf("output does not say %s was isolated", b)
		}
	}
	// (The fast broker is not required to stay available: on a loaded machine
	// under -race a scheduling stall can make even it answer in over 550 ms.)
	f, s, d := res.Brokers[fast].Late, res.Brokers[slow].Late, res.Brokers[dead].Late
	if f < 30 || f <= 2*(s+d) {
		t.Errorf("second-half attempts: fast %d, slow %d, dead %d; want fast >= 30 and over twice the others", f, s, d)
	}
	if !strings.HasPrefix(res.MetricsURL, "http://127.0.0.1:") {
		t.Errorf("metrics URL = %q, want one on 127.0.0.1", res.MetricsURL)
	}
	if got := metricValue(res.Metrics, `mqfault_isolations_total{broker="dead",producer="orders",reason="failure"}`); got < 1 {
		t.Errorf("dead broker's failure isolations in /metrics = %v, want at least 1\n%s", got, strings.Join(res.Metrics, "\n"))
	}
	if got := metricValue(res.Metrics, `mqfault_isolations_total{broker="slow",producer="orders",reason="latency"}`); got < 1 {
		t.Errorf("slow broker's latency isolations in /metrics = %v, want at least 1", got)
	}
	// The summary and /metrics count the same thing: isolations begun, and
	// extensions apart (the scrape came after the last send, so no isolation
	// began or grew in between).
	for _, b := range []string{fast, slow, dead} {
		var begun, extended float64
		for _, r := range []string{"latency", "failure", "explicit"} {
			series := `{broker="` + b + `",producer="orders",reason="` + r + `"}`
			begun += metricValue(res.Metrics, "mqfault_isolations_total"+series)
			extended += metricValue(res.Metrics, "mqfault_isolation_extensions_total"+series)
		}
		if st := res.Brokers[b]; begun != float64(st.Isolations) || extended != float64(st.Extensions) {
			t.Errorf("broker %s: /metrics counts %v isolations and %v extensions, the summary %d and %d; want them equal",
				b, begun, extended, st.Isolations, st.Extensions)
		}
	}
	// The second producer shares the registry, its series labelled apart.
	if got := metricValue(res.Metrics, `mqfault_sends_total{kind="sync",producer="audit",result="answered"}`); got < 1 {
		t.Errorf("the audit producer's answered sends in /metrics = %v, want at least 1\n%s", got, strings.Join(res.Metrics, "\n"))
	}
	if strings.Contains(out.String(), "recovered:") {
		t.Error(`output says "recovered:" of an isolation that only expired`)
	}
	if res.Brokers[dead].Expiries > 0 && !strings.Contains(out.String(), "dead  isolation expired, not recovered") {
		t.Errorf("the dead broker's isolation expired but the output does not say it did not recover")
	}
}

func metricValue(lines []string, series string) float64 {
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}
