package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/mqfault/mqfault/internal/trace"
	"github.com/mqfault/mqfault/pkg/latency"
)

func traceCommand() *command {
	return &command{
		name:    "trace",
		args:    "FILE|-",
		summary: "replay a routing trace and print its decisions",
		details: `Reads a trace (docs/TRACE.md) from FILE, or standard input for -, line by
line, and prints each of its decisions as the reference would, as it goes. The
first line that is malformed or cannot run ends the replay (exit 2); the rest
is still checked, and every problem is printed as FILE:LINE: on standard error.`,
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
	if m == "" || !m.Valid() {
		return usageErrorf("--mode %q: want %s", mode, latency.ModeChoices())
	}
	in, name := io.stdin, "<stdin>"
	if args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return badInput(err)
		}
		defer f.Close()
		in, name = f, args[0]
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
	var le *trace.LineError
	var pe *fs.PathError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &le): // one "FILE:N: ..." per problem
		return &exitError{code: exitUsage, err: traceProblems(name, err), raw: true}
	case errors.As(err, &pe): // it names the file
		return badInput(err)
	}
	// A write error too: run reports that one instead.
	return badInput(fmt.Errorf("reading %s: %w", name, err))
}

// traceProblems restates what trace.Run reported as one "FILE:N: problem"
// line per problem, saying which --mode runs an operation the trace's mode
// lacks. It wraps err.
func traceProblems(file string, err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		var le *trace.LineError
		if !errors.As(e, &le) {
			lines[i] = e.Error()
			continue
		}
		lines[i] = fmt.Sprintf("%s:%d: %v", file, le.Line, le.Err)
		var me *trace.ModeError
		if errors.As(le.Err, &me) {
			lines[i] += " (run the trace with --mode " + string(me.Want) + ")"
		}
	}
	return &restated{msg: strings.Join(lines, "\n"), err: err}
}

// restated is err in other words.
type restated struct {
	msg string
	err error
}

func (r *restated) Error() string { return r.msg }
func (r *restated) Unwrap() error { return r.err }
