package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// serving is an io.Writer that keeps what run prints and reports the base
// URL of the line saying the endpoints stay up after the run.
type serving struct {
	mu   sync.Mutex // guards buf
	buf  bytes.Buffer
	once sync.Once
	base chan string
}

var servingRE = regexp.MustCompile(`still serving (http://127\.0\.0\.1:[0-9]+)/metrics`)

func (s *serving) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.buf.Write(p)
	if m := servingRE.FindStringSubmatch(s.buf.String()); m != nil {
		s.once.Do(func() { s.base <- m[1] })
	}
	return n, err
}

func (s *serving) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// get returns the body of a GET of url, failing the test on any error.
func get(t *testing.T, url string) string {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return string(body)
}

// TestRunHold: with -hold forever, after the summary run says where it
// still serves, /metrics serves the run's last scrape (both producers'
// series, though the injectors' cleanup has unregistered them) and /faults
// the fault table as the run ended, until ctx is cancelled (an interrupt);
// then run returns, the server closed. With -hold 50ms run returns by
// itself.
func TestRunHold(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real brokers")
	}
	opts := options{Duration: 1500 * time.Millisecond, DeadAfter: 500 * time.Millisecond, SlowDelay: 600 * time.Millisecond,
		Senders: 2, Interval: 5 * time.Millisecond, Hold: holdForever}
	out := &serving{base: make(chan string, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ended struct {
		res result
		err error
	}
	done := make(chan ended, 1)
	go func() {
		res, err := run(ctx, opts, out)
		done <- ended{res, err}
	}()
	var base string
	select {
	case base = <-out.base:
	case e := <-done:
		t.Fatalf("run() returned %v before saying it still serves:\n%s", e.err, out.String())
	}
	summary := strings.Index(out.String(), "\nsummary")
	if held := strings.Index(out.String(), "still serving"); summary < 0 || held < summary {
		t.Errorf("the still-serving line comes before the summary (at %d, summary at %d):\n%s", held, summary, out.String())
	}
	var scraped []string
	for _, l := range strings.Split(get(t, base+"/metrics"), "\n") {
		if strings.HasPrefix(l, "mqfault_") {
			scraped = append(scraped, l)
		}
	}
	faults := get(t, base+"/faults")
	// The run has not ended: it holds until cancelled.
	select {
	case e := <-done:
		t.Fatalf("run() returned %v while holding, before ctx was cancelled", e.err)
	default:
	}
	cancel()
	e := <-done
	if e.err != nil {
		t.Fatalf("run() error = %v\n%s", e.err, out.String())
	}
	if !slices.Equal(scraped, e.res.Metrics) || len(scraped) == 0 {
		t.Errorf("/metrics after the run served %d mqfault_ lines, want the run's last scrape (%d lines), exactly:\n%s",
			len(scraped), len(e.res.Metrics), strings.Join(scraped, "\n"))
	}
	for _, p := range []string{`producer="orders"`, `producer="audit"`} {
		if !strings.Contains(strings.Join(scraped, "\n"), p) {
			t.Errorf("/metrics after the run has no series labelled %s", p)
		}
	}
	if !strings.Contains(faults, `"fast"`) || !strings.Contains(faults, `"dead"`) {
		t.Errorf("/faults after the run = %s, want the fault table naming the brokers", faults)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	if resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(base + "/metrics"); err == nil {
		resp.Body.Close()
		t.Errorf("GET /metrics after run returned: %s, want the server closed", resp.Status)
	}

	opts.Hold = 50 * time.Millisecond
	var quiet bytes.Buffer
	if _, err := run(context.Background(), opts, &quiet); err != nil {
		t.Fatalf("run(-hold 50ms) error = %v", err)
	}
	if !strings.Contains(quiet.String(), "still serving") || !strings.Contains(quiet.String(), "for 50ms") {
		t.Errorf("run(-hold 50ms) output does not say it serves for 50ms:\n%s", quiet.String())
	}
}
