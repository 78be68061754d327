package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/plugins/host"
)

// exitPlugin is the exit status of `probe` when the plugin cannot be
// started or is refused.
const exitPlugin = 1

const probeUsage = "usage: mqfault probe --plugin PATH [--plugin-sha256 HEX] [--timeout D] [-v] ENDPOINT..."

// runProbe is `mqfault probe`: it loads a detector plugin and asks it about
// each endpoint in turn, printing one line per endpoint:
//
//	ENDPOINT reachable
//	ENDPOINT unreachable (reason)
//	ENDPOINT inconclusive (reason)
//
// It exits 0 when it could ask (whatever the answers), 1 when the plugin
// cannot be started or is refused (a wrong checksum, a failed handshake),
// and 2 on a bad command line.
func runProbe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pluginPath := fs.String("plugin", "", "the detector plugin executable (required)")
	sum := fs.String("plugin-sha256", "", "refuse to run the plugin unless its SHA-256 is this (64 hex digits)")
	timeout := fs.Duration("timeout", time.Second, "how long each probe may take")
	verbose := fs.Bool("v", false, "also log the plugin's output and the host's workings")
	fs.Usage = func() {
		fmt.Fprintln(stderr, probeUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	switch {
	case *pluginPath == "":
		fmt.Fprintln(stderr, "mqfault probe: --plugin is required")
		fmt.Fprintln(stderr, probeUsage)
		return exitUsage
	case fs.NArg() == 0:
		fmt.Fprintln(stderr, "mqfault probe: no endpoint to probe")
		fmt.Fprintln(stderr, probeUsage)
		return exitUsage
	case *timeout <= 0:
		fmt.Fprintf(stderr, "mqfault probe: --timeout %v: must be positive\n", *timeout)
		return exitUsage
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	d, err := host.NewDetector(host.Config{
		Path:        *pluginPath,
		SHA256:      *sum,
		CallTimeout: *timeout,
		Logger:      slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		fmt.Fprintf(stderr, "mqfault probe: %v\n", err)
		if errors.Is(err, host.ErrInvalidConfig) {
			return exitUsage
		}
		return exitPlugin
	}
	defer d.Close()
	for _, ep := range fs.Args() {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		err := d.Detect(ctx, ep)
		cancel()
		fmt.Fprintln(stdout, probeLine(ep, err))
	}
	return 0
}

// probeLine formats one answer.
func probeLine(endpoint string, err error) string {
	if err == nil {
		return endpoint + " reachable"
	}
	verdict := "unreachable"
	if errors.Is(err, latency.ErrProbeInconclusive) {
		verdict = "inconclusive"
	}
	reason := err
	var pe *latency.ProbeError
	if errors.As(err, &pe) && pe.Err != nil {
		reason = pe.Err
	}
	return endpoint + " " + verdict + " (" + strings.Join(strings.Fields(reason.Error()), " ") + ")"
}
