package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/mqfault/mqfault/internal/trace"
	"github.com/mqfault/mqfault/pkg/latency"
)

func traceCommand() *command {
	return &command{
		name:    "trace",
		args:    "FILE|-",
		summary: "replay a routing trace and print its decisions",
		details: `Reads a trace (docs/TRACE.md) from FILE, or standard input for -, and prints
each of its decisions as the reference would. A line that cannot run ends the
replay with its line number (exit 2).`,
		setup: func(fs *flag.FlagSet) func(context.Context, streams, []string) error {
			mode := fs.String("mode", "v5", "whose decisions to reproduce: `v5|v4` (RocketMQ 5.3.3 or 4.9.8)")
			return func(ctx context.Context, io streams, args []string) error {
				return runTrace(ctx, io, *mode, args)
			}
		},
	}
}

// runTrace is `mqfault trace [--mode v5|v4] FILE|-`.
func runTrace(ctx context.Context, io streams, mode string, args []string) error {
	if len(args) != 1 {
		return usageErrorf("want one trace FILE, or - for standard input; got %d arguments", len(args))
	}
	m := latency.Mode(mode)
	if m != latency.ModeV5 && m != latency.ModeV4 {
		return usageErrorf("--mode %q: want v5 or v4", mode)
	}
	in := io.stdin
	if name := args[0]; name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return badInput(err)
		}
		defer f.Close()
		in = f
	}
	// A read from a terminal or a pipe does not return on a signal: replay
	// in a goroutine, so an interrupt ends the command at once (the process
	// exits; the goroutine goes with it).
	done := make(chan error, 1)
	go func() { done <- trace.Run(in, io.stdout, m) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		return errInterrupted
	}
	if err == nil {
		return nil
	}
	var le *trace.LineError
	if errors.As(err, &le) { // one "line N: ..." per malformed line, as they are
		return &exitError{code: exitUsage, err: err, raw: true}
	}
	return badInput(fmt.Errorf("reading the trace: %w", err))
}
