package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mqfault/mqfault/internal/trace"
	"github.com/mqfault/mqfault/pkg/latency"
)

// runTrace is `mqfault trace [--mode v5|v4] FILE|-`.
func runTrace(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "v5", "whose decisions to reproduce: v5 (RocketMQ 5.3.3) or v4 (4.9.8)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mqfault trace [--mode v5|v4] FILE|-")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	m := latency.Mode(*mode)
	if m != latency.ModeV5 && m != latency.ModeV4 {
		fmt.Fprintf(stderr, "mqfault trace: --mode %q: want v5 or v4\n", *mode)
		return exitUsage
	}
	in := stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "mqfault trace: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		in = f
	}
	if err := trace.Run(in, stdout, m); err != nil {
		var le *trace.LineError
		if errors.As(err, &le) {
			fmt.Fprintln(stderr, err) // one "line N: ..." per malformed line
		} else {
			fmt.Fprintf(stderr, "mqfault trace: %v\n", err)
		}
		return exitUsage
	}
	return 0
}
