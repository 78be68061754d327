// Command customproducer is a complete custom producer built on mqfault: it
// starts three brokers of its own on loopback TCP (a tiny line protocol), one
// healthy, one that answers slowly and one that stops accepting connections
// partway, composes a producer over them with the mqfault/wire injectors
// (configuration from config.Load, the built-in TCP detector, slog and
// Prometheus observers), and sends to all three for a while. A second
// producer (audit) sends beside it, exporting to the same Prometheus
// registry: Observability.Name labels each one's metrics producer="NAME". It prints each
// broker's traffic every second and each isolation and its end as they happen,
// serves /metrics and the fault table (/faults) on 127.0.0.1, and ends with a
// per-broker summary.
//
//	go run ./examples/customproducer                 # 10 s
//	go run ./examples/customproducer -duration 30s   # longer
//	MQFAULT_PRESET=reference5 MQFAULT_FAULT_TOLERANCE=true go run ./examples/customproducer
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe"
	"github.com/mqfault/mqfault/pkg/producer"
	mqwire "github.com/mqfault/mqfault/wire"
)

// options shape one run.
type options struct {
	Duration   time.Duration // how long to send
	DeadAfter  time.Duration // when the dead broker stops accepting connections
	SlowDelay  time.Duration // how long the slow broker takes to answer
	Senders    int           // goroutines sending
	Interval   time.Duration // pause between two sends of one goroutine
	ConfigPath string        // a YAML or JSON configuration file, or ""
	Environ    []string      // the MQFAULT_ environment (os.Environ())
}

// validate reports every flag out of range (and any argument, which the
// program does not take), one line each, so a run that would send nothing
// or make no sense fails instead of exiting 0.
func (o options) validate(args []string) error {
	var errs []error
	bad := func(flag string, v any, reason string) {
		errs = append(errs, fmt.Errorf("customproducer: -%s %v: %s", flag, v, reason))
	}
	if o.Duration <= 0 {
		bad("duration", o.Duration, "must be positive (how long to send)")
	}
	if o.DeadAfter < 0 {
		bad("dead-after", o.DeadAfter, "must not be negative")
	}
	if o.SlowDelay < 0 {
		bad("slow", o.SlowDelay, "must not be negative")
	}
	if o.Senders < 1 {
		bad("senders", o.Senders, "must be at least 1")
	}
	if o.Interval < 0 {
		bad("interval", o.Interval, "must not be negative")
	}
	if len(args) > 0 {
		errs = append(errs, fmt.Errorf("customproducer: unexpected argument %q: the program takes only flags", args[0]))
	}
	return errors.Join(errs...)
}

// result is what a run measured.
type result struct {
	Brokers     map[string]BrokerStats
	Sends       int64
	FailedSends int64
	MetricsURL  string
	// Metrics holds the mqfault_ lines of the last /metrics scrape.
	Metrics []string
}

// The two producers' names, which are also their topics. Both export to one
// Prometheus registry, each metric labelled producer="NAME"
// (Observability.Name); the console follows orders.
const (
	topic      = "orders"
	auditTopic = "audit"
)

// The brokers' names.
const (
	fast = "fast"
	slow = "slow"
	dead = "dead"
)

func main() {
	opts := options{Environ: os.Environ()}
	flag.DurationVar(&opts.Duration, "duration", 10*time.Second, "how long to send")
	flag.DurationVar(&opts.DeadAfter, "dead-after", 1500*time.Millisecond, "when the dead broker stops accepting connections")
	flag.DurationVar(&opts.SlowDelay, "slow", 800*time.Millisecond, "how long the slow broker takes to answer (550ms or more isolates it)")
	flag.IntVar(&opts.Senders, "senders", 4, "goroutines sending")
	flag.DurationVar(&opts.Interval, "interval", 10*time.Millisecond, "pause between two sends of one goroutine")
	flag.StringVar(&opts.ConfigPath, "config", "", "a YAML or JSON mqfault configuration file (MQFAULT_ variables apply over it)")
	flag.Parse()
	if err := opts.validate(flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		fmt.Fprintln(os.Stderr, "run customproducer -h for the flags")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "customproducer:", err)
		os.Exit(1)
	}
}

// run starts the brokers, composes the producer, sends for opts.Duration (or
// until ctx is done), and tears everything down again, writing what happens
// to out.
func run(ctx context.Context, opts options, out io.Writer) (result, error) {
	if opts.Senders < 1 {
		opts.Senders = 1
	}
	cfg, err := config.LoadEnv(opts.ConfigPath, opts.Environ)
	if err != nil {
		return result{}, err
	}

	// 1. Three brokers on loopback.
	brokers := make(map[string]*broker)
	defer func() {
		for _, b := range brokers {
			b.Close()
		}
	}()
	for name, delay := range map[string]time.Duration{fast: 0, slow: opts.SlowDelay, dead: 0} {
		b, err := startBroker(name, delay)
		if err != nil {
			return result{}, err
		}
		brokers[name] = b
	}
	addrs := make(map[string]string)
	resolver := latency.StaticResolver{}
	for name, b := range brokers {
		addrs[name], resolver[name] = b.Addr(), b.Addr()
	}
	var routes producer.StaticRoutes
	routes.SetQueues(topic, map[string]int{fast: 4, slow: 4, dead: 4})
	routes.SetQueues(auditTopic, map[string]int{fast: 2, slow: 2, dead: 2})
	transport := newLineTransport(addrs)
	defer transport.Close()

	// 2. The producer, composed by the injector with the TCP detector.
	start := time.Now()
	con := &console{w: out, start: start}
	out = con // from here on, everything is written under the console's lock
	names := []string{fast, slow, dead}
	watch := newWatcher(con, names, start.Add(opts.Duration/2))
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelError}))
	obs := mqwire.Observability{
		Logger:     logger,
		Registerer: reg,
		Name:       topic,
		Strategy:   watch,
		Producer:   watch,
	}
	p, cleanupOrders, err := mqwire.NewTCPProducer(cfg, transport, &routes, resolver, obs)
	if err != nil {
		return result{}, err
	}
	cleaned := false
	cleanup := cleanupOrders
	defer func() {
		if !cleaned {
			cleanup()
		}
	}()
	// A second producer, with a strategy of its own, on the same registry:
	// its Name keeps its metrics apart from the first's.
	audit, cleanupAudit, err := mqwire.NewTCPProducer(cfg, transport, &routes, resolver,
		mqwire.Observability{Logger: logger, Registerer: reg, Name: auditTopic})
	if err != nil {
		return result{}, err
	}
	cleanup = func() {
		cleanupAudit()
		cleanupOrders()
	}
	strat := p.Strategy()

	// 3. /metrics and /faults on an ephemeral loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/faults", observe.NewTableHandler(strat))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		<-served
	}()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "brokers: fast %s, slow %s (answers after %v), dead %s (stops accepting at %v)\n",
		addrs[fast], addrs[slow], opts.SlowDelay, addrs[dead], opts.DeadAfter)
	fmt.Fprintf(out, "config: mode %s, fault tolerance %s, detector %s (a round every %v, TCP probes), per-attempt cap %v, %d retries\n",
		strat.Mode(), onOff(strat.FaultToleranceEnabled()), onOff(strat.DetectorEnabled()), cfg.Strategy.DetectPeriod,
		cfg.Producer.MaxTimeoutPerRequest, cfg.Producer.RetryTimes)
	fmt.Fprintf(out, "metrics: %s/metrics (producers orders and audit, label producer)   fault table of orders: %s/faults\n", base, base)

	// 4. Send for a while; the dead broker dies on schedule; report every second.
	runCtx, cancel := context.WithTimeout(ctx, opts.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range opts.Senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(runCtx, p, topic, i, opts.Interval)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		send(runCtx, audit, auditTopic, 0, 4*opts.Interval)
	}()
	kill := time.AfterFunc(opts.DeadAfter, func() {
		brokers[dead].StopAccepting()
		con.printf("%-5s stops accepting connections", dead)
	})
	defer kill.Stop()
	isolated := func(b string) bool {
		it, ok := strat.Table().Item(b)
		return ok && !it.Available
	}
	ticker := time.NewTicker(time.Second)
	last := start
	for done := false; !done; {
		select {
		case now := <-ticker.C:
			watch.tick(isolated, now.Sub(last))
			last = now
		case <-runCtx.Done():
			done = true
		}
	}
	ticker.Stop()
	wg.Wait()

	// 5. One scrape of our own /metrics, then close everything in order: the
	// producer, then the strategy (the injector's cleanup), then the rest.
	res := result{MetricsURL: base + "/metrics"}
	res.Metrics, err = scrape(res.MetricsURL)
	if err != nil {
		return result{}, err
	}
	fmt.Fprintln(out, "\nfrom /metrics (both producers):")
	for _, l := range res.Metrics {
		counted := strings.HasPrefix(l, "mqfault_isolation") || strings.HasPrefix(l, "mqfault_picks_total") ||
			strings.HasPrefix(l, "mqfault_sends_total")
		if counted && !strings.HasSuffix(l, " 0") {
			fmt.Fprintln(out, "  "+l)
		}
	}
	cleanup()
	cleaned = true
	stored := make(map[string]int64)
	for n, b := range brokers {
		stored[n] = b.stored.Load()
	}
	res.Brokers = watch.stats(stored)
	res.Sends, res.FailedSends = watch.sends.Load(), watch.failedSends.Load()
	printSummary(out, res.Brokers, res.Sends, res.FailedSends)
	return res, nil
}

// send sends messages one after another until ctx is done.
func send(ctx context.Context, p *producer.Producer, topic string, sender int, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		msg := &producer.Message{Topic: topic, Body: fmt.Appendf(nil, "sender %d message %d", sender, n)}
		// The send's own budget (the timeout knob) bounds it; ctx only stops
		// new sends, so a send in progress finishes.
		_, _ = p.SendSync(context.WithoutCancel(ctx), msg)
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// scrape returns the mqfault_ sample lines of a /metrics endpoint.
func scrape(url string) ([]string, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New("GET " + url + ": " + resp.Status)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "mqfault_") {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}
