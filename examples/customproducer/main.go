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
// per-broker summary. With -hold it keeps /metrics and /faults up after the
// summary, serving what they said at the end of the run, for a while or
// until interrupted. README.md beside this file shows a run.
//
//	go run ./examples/customproducer                 # 10 s
//	go run ./examples/customproducer -duration 30s   # longer
//	go run ./examples/customproducer -hold forever   # then /metrics until Ctrl-C
//	MQFAULT_PRESET=reference5 MQFAULT_FAULT_TOLERANCE=true go run ./examples/customproducer
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe"
	"github.com/mqfault/mqfault/pkg/probe"
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
	// Hold keeps /metrics and /faults up this long after the summary (0:
	// not at all; holdForever: until interrupted), serving what they said
	// at the end of the run. An interrupt ends it early.
	Hold time.Duration
}

// holdForever is -hold forever: serve until interrupted.
const holdForever = time.Duration(math.MaxInt64)

// holdValue is the -hold flag: a duration, or "forever".
type holdValue struct{ d *time.Duration }

func (h holdValue) String() string {
	if h.d == nil || *h.d == 0 {
		return "0s"
	}
	if *h.d == holdForever {
		return "forever"
	}
	return h.d.String()
}

func (h holdValue) Set(s string) error {
	if s == "forever" {
		*h.d = holdForever
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil && s != "0" {
			return errors.New("a duration needs a unit, e.g. 30s, or forever")
		}
		return errors.New("want a duration such as 30s, or forever")
	}
	*h.d = d
	return nil
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
	if o.Hold < 0 {
		bad("hold", o.Hold, "must not be negative (0: exit after the summary; forever: until interrupted)")
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
	fs := newFlags(&opts)
	_ = fs.Parse(os.Args[1:]) // flag.ExitOnError: a bad flag exits 2
	if err := opts.validate(fs.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		fmt.Fprintln(os.Stderr, "run customproducer -h for the flags")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "customproducer:", err)
		os.Exit(1)
	}
}

// newFlags returns the program's flags, each bound to its field of opts
// with its default set.
func newFlags(opts *options) *flag.FlagSet {
	fs := flag.NewFlagSet("customproducer", flag.ExitOnError)
	fs.DurationVar(&opts.Duration, "duration", 10*time.Second, "how long to send")
	fs.DurationVar(&opts.DeadAfter, "dead-after", 1500*time.Millisecond, "when the dead broker stops accepting connections")
	fs.DurationVar(&opts.SlowDelay, "slow", 800*time.Millisecond, "how long the slow broker takes to answer (550ms or more isolates it)")
	fs.IntVar(&opts.Senders, "senders", 4, "goroutines sending")
	fs.DurationVar(&opts.Interval, "interval", 10*time.Millisecond, "pause between two sends of one goroutine")
	fs.StringVar(&opts.ConfigPath, "config", "", "a YAML or JSON mqfault configuration file (MQFAULT_ variables apply over it)")
	fs.Var(holdValue{&opts.Hold}, "hold", "after the summary, keep serving the run's final /metrics and /faults for `D` (a duration such as 5m, or forever); Ctrl-C ends it")
	return fs
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
	resolver := probe.StaticResolver{}
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
	ends := &endpoints{reg: reg, strat: strat, faults: observe.NewTableHandler(strat)}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(ends, promhttp.HandlerOpts{}))
	mux.Handle("/faults", ends)
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

	// 5. Freeze the endpoints, scrape our own /metrics, then close everything
	// in order: the producer, then the strategy (the injector's cleanup),
	// then the rest.
	if err := ends.freeze(); err != nil {
		return result{}, err
	}
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
	if opts.Hold > 0 {
		how := "until interrupted (Ctrl-C)"
		if opts.Hold != holdForever {
			how = fmt.Sprintf("for %v, or until interrupted (Ctrl-C)", opts.Hold)
		}
		fmt.Fprintf(out, "\nthe run is over; still serving %s/metrics and %s/faults as they ended, %s\n", base, base, how)
		hold(ctx, opts.Hold)
	}
	return res, nil
}

// hold returns when ctx is done or d has passed (never, for holdForever).
func hold(ctx context.Context, d time.Duration) {
	if d == holdForever {
		<-ctx.Done()
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// endpoints serves /metrics (as a prometheus.Gatherer) and /faults: live
// during the run, then what they said when freeze was called, since the
// injectors' cleanup unregisters the metrics and closes the strategy. It is
// safe for concurrent use.
type endpoints struct {
	reg    *prometheus.Registry
	strat  *latency.Strategy
	faults http.Handler // the live fault table
	final  atomic.Pointer[final]
}

// final is what the endpoints said at the end of the run.
type final struct {
	metrics []*dto.MetricFamily
	faults  []byte // the fault table as JSON
}

// freeze takes the metrics and the fault table as they are now and serves
// them from then on.
func (e *endpoints) freeze() error {
	mfs, err := e.reg.Gather()
	if err != nil {
		return err
	}
	faults, err := json.MarshalIndent(observe.Snapshot(e.strat, time.Now()), "", "  ")
	if err != nil {
		return err
	}
	e.final.Store(&final{metrics: mfs, faults: append(faults, '\n')})
	return nil
}

// Gather implements prometheus.Gatherer.
func (e *endpoints) Gather() ([]*dto.MetricFamily, error) {
	if f := e.final.Load(); f != nil {
		return f.metrics, nil
	}
	return e.reg.Gather()
}

// ServeHTTP serves /faults.
func (e *endpoints) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := e.final.Load()
	if f == nil || r.Method != http.MethodGet && r.Method != http.MethodHead {
		e.faults.ServeHTTP(w, r) // live, or its answer to another method
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(f.faults)
	}
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
