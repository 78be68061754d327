package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/plugins/host"
)

func probeCommand() *command {
	return &command{
		name:    "probe",
		args:    "ENDPOINT...",
		summary: "ask a detector plugin, or a TCP connect, whether endpoints are reachable",
		details: `Starts the detector plugin (--plugin PATH), or uses the built-in TCP detector
(--tcp: reachable when a TCP connection succeeds within --timeout; no plugin is
built or run), asks it about each ENDPOINT in turn and prints one line per
endpoint:

  ENDPOINT reachable
  ENDPOINT unreachable (reason)
  ENDPOINT inconclusive (reason)

Arguments for the plugin are given one --plugin-arg each, e.g.
  mqfault probe --plugin ./grpc-health-detector --plugin-arg=--service --plugin-arg=orders host:8081
With --every D it probes again every D until interrupted, and each line starts
with the time its probe started (2006-01-02T15:04:05.000Z07:00). The plugin
process is stopped however probe ends, Ctrl-C and a closed standard output
(| head -1) included. Standard error has the host's trouble (a plugin that
died and is restarted); the plugin's own output and the host's workings only
with -v.

Exit status: 0 when it could ask (whatever the answers, unless
--fail-unreachable), 1 when the plugin cannot be started or is refused (a wrong
checksum, a failed handshake), 2 on a bad command line, 3 with
--fail-unreachable when an endpoint was unreachable or inconclusive, 130 when
interrupted, 141 (silently) when the reader of its standard output went away.`,
		setup: func(fs *flag.FlagSet) func(context.Context, streams, []string) error {
			var o probeOptions
			fs.StringVar(&o.plugin, "plugin", "", "the detector plugin executable `PATH` (this or --tcp)")
			fs.BoolVar(&o.tcp, "tcp", false, "probe with the built-in TCP detector instead of a plugin: reachable when a TCP connection succeeds")
			fs.StringVar(&o.sum, "plugin-sha256", "", "refuse to run the plugin unless its SHA-256 is `HEX` (64 hex digits)")
			fs.Func("plugin-arg", "pass `ARG` to the plugin on its command line (repeat for several)", func(s string) error {
				o.args = append(o.args, s)
				return nil
			})
			fs.DurationVar(&o.timeout, "timeout", time.Second, "the time `D` each probe may take")
			fs.BoolVar(&o.failUnreachable, "fail-unreachable", false, "exit 3 when an endpoint is unreachable or inconclusive (for scripted health checks)")
			fs.DurationVar(&o.every, "every", 0, "probe again every `D` until interrupted, each line starting with its time")
			fs.BoolVar(&o.verbose, "v", false, "also log the plugin's own output and the host's workings (without it, only the host's trouble)")
			return func(ctx context.Context, io streams, args []string) error {
				return runProbe(ctx, io, o, args)
			}
		},
	}
}

type probeOptions struct {
	plugin, sum     string
	tcp             bool
	args            []string
	timeout, every  time.Duration
	failUnreachable bool
	verbose         bool
	// clock times the probes, the plugin host and --every, and stamps the
	// lines (nil: clock.Real); a test sets a manual one.
	clock clock.Clock
}

// timeFormat stamps each line of probe --every: when its probe started.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// runProbe is `mqfault probe`.
func runProbe(ctx context.Context, io streams, o probeOptions, endpoints []string) error {
	switch {
	case o.plugin == "" && !o.tcp:
		return usageErrorf("--plugin PATH or --tcp is required: which detector to ask")
	case o.plugin != "" && o.tcp:
		return usageErrorf("--plugin and --tcp exclude each other: ask a plugin, or the built-in TCP detector")
	case o.tcp && o.sum != "":
		return usageErrorf("--plugin-sha256 is for --plugin, not --tcp")
	case o.tcp && len(o.args) > 0:
		return usageErrorf("--plugin-arg is for --plugin, not --tcp")
	case len(endpoints) == 0:
		return usageErrorf("no endpoint to probe")
	case o.timeout <= 0:
		return usageErrorf("--timeout %v: must be positive", o.timeout)
	case o.every < 0:
		return usageErrorf("--every %v: must be positive", o.every)
	case o.every > 0 && o.failUnreachable:
		return usageErrorf("--fail-unreachable is for one round of probes; with --every probe runs until interrupted")
	}
	clk := o.clock
	if clk == nil {
		clk = clock.Real{}
	}
	var d probe.ServiceDetector = probe.TCPDetector{}
	if !o.tcp {
		pd, err := startPlugin(io, o, clk)
		if err != nil {
			return err
		}
		// However probe ends (a signal included), the plugin process goes.
		defer pd.Close()
		d = pd
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for {
		failed := 0
		for _, ep := range endpoints {
			started := clk.Now()
			pctx, cancel := clock.WithTimeout(ctx, clk, o.timeout)
			err := d.Detect(pctx, ep)
			cancel()
			if ctx.Err() != nil {
				return ctx.Err() // this answer is the interrupt's, not the endpoint's
			}
			if err != nil {
				failed++
			}
			line := probeLine(ep, err, o.timeout)
			if o.every > 0 {
				line = started.Format(timeFormat) + " " + line
			}
			if _, err := fmt.Fprintln(io.stdout, line); err != nil {
				return err
			}
		}
		if o.every == 0 {
			if o.failUnreachable && failed > 0 {
				return &exitError{code: exitUnreachable, err: fmt.Errorf("%d of %d endpoints not reachable", failed, len(endpoints))}
			}
			return nil
		}
		if err := sleep(ctx, clk, o.every); err != nil {
			return err
		}
	}
}

// startPlugin starts the detector plugin of o.
func startPlugin(io streams, o probeOptions, clk clock.Clock) (*host.Detector, error) {
	// The host's trouble (a plugin that died, a restart) at WARN; with -v
	// its workings too, and the plugin's own output.
	logger := slog.New(slog.NewTextHandler(io.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	output := slog.New(slog.DiscardHandler)
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(io.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		output = logger
	}
	d, err := host.NewDetector(host.Config{
		Path:         o.plugin,
		Args:         o.args,
		SHA256:       o.sum,
		CallTimeout:  o.timeout,
		Clock:        clk,
		Logger:       logger,
		OutputLogger: output,
	})
	if errors.Is(err, host.ErrInvalidConfig) {
		return nil, badInput(err)
	}
	return d, err
}

// sleep waits d on clock, or until ctx ends (then it returns ctx's error).
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	wake := make(chan struct{})
	t := clk.AfterFunc(d, func() { close(wake) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
		return nil
	}
}

// probeLine formats one answer. A probe that ran out of time says so with
// the --timeout given, not with what was left of it when the plugin was
// asked.
func probeLine(endpoint string, err error, timeout time.Duration) string {
	if err == nil {
		return endpoint + " reachable"
	}
	verdict := "unreachable"
	if errors.Is(err, probe.ErrInconclusive) {
		verdict = "inconclusive"
	}
	var reason string
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, host.ErrCallTimeout) {
		reason = "no answer within " + timeout.String()
	} else {
		cause := err
		var pe *probe.Error
		if errors.As(err, &pe) && pe.Err != nil {
			cause = pe.Err
		}
		reason = strings.Join(strings.Fields(cause.Error()), " ")
	}
	return endpoint + " " + verdict + " (" + reason + ")"
}
