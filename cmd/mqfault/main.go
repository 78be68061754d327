// Command mqfault is mqfault's command line: `sim` compares fault-tolerance
// strategies on simulated broker faults (see pkg/sim), `trace` replays a
// routing trace (see docs/TRACE.md).
package main

import (
	"fmt"
	"io"
	"os"
)

// exitUsage is the exit status for bad input: a malformed command line, trace,
// scenario or an unreadable file.
const exitUsage = 2

var commands = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) int{
	"sim":   runSim,
	"trace": runTrace,
	"probe": runProbe,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mqfault: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd(args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: mqfault COMMAND [ARGS]

commands:
  sim [--scenario FILE] [--seed N] [--json] [--report FILE.html]
                                compare fault-tolerance strategies on simulated broker faults
  trace [--mode v5|v4] FILE|-   replay a routing trace and print its decisions
  probe --plugin PATH [--plugin-sha256 HEX] [--timeout D] ENDPOINT...
                                ask a detector plugin whether endpoints are reachable
`)
}
