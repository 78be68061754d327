// Command mqfault is mqfault's command line: `sim` compares fault-tolerance
// strategies on simulated broker faults (see pkg/sim), `trace` replays a
// routing trace (see docs/TRACE.md), `probe` asks a detector plugin whether
// endpoints are reachable, `version` says which build this is.
//
// Flags may come before or after the positional arguments; `--` ends the
// flags. `mqfault help` lists every command with every flag; `mqfault help
// COMMAND` and `mqfault COMMAND --help` print one command's usage, to
// standard output.
//
// Exit status:
//
//	0    success
//	1    failure: a plugin that cannot be started, output that cannot be written
//	2    bad command line or bad input (a scenario, a trace, an unreadable file)
//	3    probe --fail-unreachable: an endpoint was not reachable
//	130  interrupted (SIGINT or SIGTERM); one line on standard error
//	141  standard output was a pipe whose reader went away (`| head -1`),
//	     as for a program ended by SIGPIPE; nothing is printed, and what
//	     the command started (a plugin) is stopped first
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// The exit statuses.
const (
	exitFailure     = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitInterrupted = 130 // 128 + SIGINT, what shells report for Ctrl-C
	exitBrokenPipe  = 141 // 128 + SIGPIPE
)

func main() {
	// A write to a pipe whose reader went away (`mqfault probe --every 1s |
	// head -1`) fails with EPIPE instead of killing the process, so that the
	// command stops what it started (a plugin) before it exits with
	// exitBrokenPipe. Left on for the whole run: the signal itself is
	// ignored, and could as well come from a plugin's socket.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal the command winds down; a second one kills the
	// process the default way, should winding down hang.
	context.AfterFunc(ctx, stop)
	code := runContext(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is runContext without cancellation.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdin, stdout, stderr)
}

// runContext runs the command line args and returns the exit status. When ctx
// is cancelled (a signal), the command stops, one line says so, and the
// status is exitInterrupted.
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		topUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return writeOut(stdout, stderr, "mqfault", topUsage)
	case "-version", "--version":
		args = []string{"version"}
	case "help":
		return runHelp(args[1:], stdout, stderr)
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "mqfault: unknown command %q\nRun 'mqfault help' for usage.\n", args[0])
		return exitUsage
	}
	return cmd.run(ctx, args[1:], stdin, stdout, stderr)
}

// runHelp is `mqfault help [COMMAND]`.
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0, args[0] == "help":
		return writeOut(stdout, stderr, "mqfault", topUsage)
	case len(args) > 1:
		fmt.Fprintln(stderr, "mqfault help: want at most one command\nusage: mqfault help [COMMAND]")
		return exitUsage
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "mqfault help: unknown command %q\nRun 'mqfault help' for usage.\n", args[0])
		return exitUsage
	}
	return writeOut(stdout, stderr, "mqfault help", cmd.usage)
}

// writeOut writes with print to stdout and fails if stdout cannot take it.
func writeOut(stdout, stderr io.Writer, prefix string, print func(io.Writer)) int {
	w := &errWriter{w: stdout}
	print(w)
	if w.err != nil {
		fmt.Fprintf(stderr, "%s: writing output: %v\n", prefix, w.err)
		return exitFailure
	}
	return 0
}

// errWriter remembers the first error its writer returned, so that a command
// whose output was lost (a full disk, a closed pipe) cannot exit 0.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// An exitError ends a command with an exit status other than 1. A nil err
// means the command has already said everything.
type exitError struct {
	code  int
	err   error
	usage bool // a bad command line: show the command's synopsis too
	raw   bool // print err as it is, without the "mqfault NAME: " prefix
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a bad command line (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...), usage: true}
}

// badInput is bad input other than the command line (exit 2).
func badInput(err error) error { return &exitError{code: exitUsage, err: err} }

var errInterrupted = errors.New("interrupted")

// brokenPipe reports whether err is a write to a pipe nobody reads any more.
func brokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }
