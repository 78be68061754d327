package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mqfault/mqfault/internal/input/suggest"
)

// A command is one of mqfault's subcommands. Its flags are defined in one
// place, setup, which the dispatcher, the command's usage and the top-level
// usage all call, so that no usage text can miss a flag.
type command struct {
	name    string
	args    string // the positional arguments as the synopsis shows them, e.g. "FILE|-"
	summary string // one line for the top-level usage
	details string // paragraphs for `mqfault help NAME`, or ""
	// setup defines the command's flags on fs and returns its body, which
	// gets the positional arguments once the flags are parsed.
	setup func(fs *flag.FlagSet) func(ctx context.Context, io streams, args []string) error
}

// streams are a command's standard streams. stdout is an *errWriter: a
// failed write makes the command fail even if the command ignored it.
type streams struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// commands returns every command, in the order the usage lists them.
func commands() []*command {
	return []*command{simCommand(), traceCommand(), probeCommand(), versionCommand()}
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// flagSet returns the command's flags, defined and unparsed, and its body.
func (c *command) flagSet() (*flag.FlagSet, func(context.Context, streams, []string) error) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and usage are printed by run
	fs.Usage = func() {}
	body := c.setup(fs)
	return fs, body
}

// synopsis is "mqfault NAME [FLAGS] ARGS".
func (c *command) synopsis() string {
	s := "mqfault " + c.name
	if fs, _ := c.flagSet(); hasFlags(fs) {
		s += " [FLAGS]"
	}
	if c.args != "" {
		s += " " + c.args
	}
	return s
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// usage prints the command's full usage: synopsis, details, flags.
func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s.\n", c.synopsis(), upperFirst(c.summary))
	if c.details != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.details))
	}
	if fs, _ := c.flagSet(); hasFlags(fs) {
		fmt.Fprintln(w, "\nFlags (before or after the arguments; -- ends them):")
		printFlags(w, fs)
	}
}

// printFlags prints every flag of fs, one per line: "--name ARG  usage
// (default X)".
func printFlags(w io.Writer, fs *flag.FlagSet) {
	type row struct{ left, right string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		left := flagName(f.Name)
		if arg != "" {
			left += " " + arg
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" {
			text += " (default " + def + ")"
		}
		rows = append(rows, row{left, text})
		width = max(width, len(left))
	})
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r.left, r.right)
	}
}

// topUsage prints mqfault's usage: every command with every flag.
func topUsage(w io.Writer) {
	fmt.Fprint(w, "usage: mqfault COMMAND [FLAGS] [ARGS]\n\nCommands:\n")
	cmds := commands()
	width := len("help")
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, "help", "print a command's usage (mqfault help COMMAND)")
	for _, c := range cmds {
		fmt.Fprintf(w, "\n%s\n", c.synopsis())
		if fs, _ := c.flagSet(); hasFlags(fs) {
			printFlags(w, fs)
		}
	}
	fmt.Fprint(w, `
Flags may come before or after the arguments; -- ends them. --help prints a
command's usage, --version the version.

Exit status: 0 success; 1 failure (a plugin that cannot start, output that
cannot be written); 2 bad command line or input; 3 probe --fail-unreachable
found an endpoint not reachable; 130 interrupted (SIGINT, SIGTERM); 141 the
reader of standard output went away (| head -1), silently.
`)
}

// flagName spells a flag as the usage does: --name, or -v for a one-letter
// name.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// parseFlags parses args with fs, letting flags come after positional
// arguments (as go, kubectl and gh do); "--" ends the flags. It returns the
// positional arguments. A bad flag's error spells it as the usage does and
// says what it takes (see flagError).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var failed *flagError
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(*checkedValue); !ok {
			f.Value = &checkedValue{Value: f.Value, name: f.Name, failed: &failed}
		}
	})
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if failed != nil {
				return nil, failed
			}
			return nil, restateFlagError(fs, err)
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" && !takesValue(fs, args, n-1) {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// takesValue reports whether args[i] is the value of the flag before it
// (`--plugin --`), not the end of the flags.
func takesValue(fs *flag.FlagSet, args []string, i int) bool {
	if i == 0 {
		return false
	}
	name := strings.TrimLeft(args[i-1], "-")
	if !strings.HasPrefix(args[i-1], "-") || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}

// run parses args, runs the command's body and turns what it returns into an
// exit status, printing the error: one line (or one block) prefixed
// "mqfault NAME: ", the synopsis after a bad command line, one line
// "interrupted" after a signal.
func (c *command) run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := &errWriter{w: stdout}
	fs, body := c.flagSet()
	pos, err := parseFlags(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.usage(out)
		err = nil
	case err != nil:
		err = &exitError{code: exitUsage, err: err, usage: true}
	default:
		err = body(ctx, streams{stdin: stdin, stdout: out, stderr: stderr}, pos)
	}
	if out.err != nil { // whatever the body made of it
		if brokenPipe(out.err) {
			// Nobody reads on: end as quietly as a program SIGPIPE
			// ends, now that the body has stopped what it started.
			return exitBrokenPipe
		}
		err = fmt.Errorf("writing output: %w", out.err)
	}
	return c.report(ctx, stderr, err)
}

// report prints err and returns the exit status for it.
func (c *command) report(ctx context.Context, stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	if ctx.Err() != nil || errors.Is(err, errInterrupted) {
		fmt.Fprintf(stderr, "mqfault %s: interrupted\n", c.name)
		return exitInterrupted
	}
	code := exitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	if ee != nil && ee.raw {
		fmt.Fprintln(stderr, err)
		return code
	}
	fmt.Fprintf(stderr, "mqfault %s: %s\n", c.name, c.trimPrefix(err.Error()))
	if ee != nil && ee.usage {
		fmt.Fprintf(stderr, "usage: %s\nRun 'mqfault help %s' for every flag.\n", c.synopsis(), c.name)
	}
	return code
}

// trimPrefix drops the name of the command's package where an error repeats
// it after the command's own prefix ("mqfault sim: --strategies: sim:
// unknown strategy" reads "mqfault sim: --strategies: unknown strategy").
func (c *command) trimPrefix(msg string) string {
	p := c.name + ": "
	msg = strings.TrimPrefix(msg, p)
	return strings.ReplaceAll(msg, ": "+p, ": ")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// checkedValue is a flag's value that, when a value does not parse, records
// an error saying what a good one looks like: the flag package's own says
// only "parse error", after the flag spelled with one dash.
type checkedValue struct {
	flag.Value
	name   string
	failed **flagError
}

func (v *checkedValue) Set(s string) error {
	err := v.Value.Set(s)
	if err != nil && *v.failed == nil {
		*v.failed = &flagError{msg: flagName(v.name) + " " + quoteIfBlank(s) + ": " + wantFor(v.Value, s, err), err: err}
	}
	return err
}

// IsBoolFlag passes the wrapped value's on, so `-v` still takes no value.
func (v *checkedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// wantFor says what a good value for v looks like, s having failed with err.
func wantFor(v flag.Value, s string, err error) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return err.Error()
	}
	switch g.Get().(type) {
	case time.Duration:
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return "a duration needs a unit, e.g. " + s + "ms"
		}
		return "not a duration: write a number and a unit, e.g. 500ms, 2s or 1m30s"
	case bool:
		return "want true or false"
	case int, int64:
		return "want a whole number, e.g. 42"
	case uint, uint64:
		return "want a whole number from 0 up, e.g. 42"
	case float64:
		return "want a number, e.g. 0.5"
	case string: // a flag.Func's error, or a custom value's, says it all
		return err.Error()
	}
	return err.Error()
}

func quoteIfBlank(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n") {
		return strconv.Quote(s)
	}
	return s
}

// flagError is a bad command line's flag, said in the usage's words.
type flagError struct {
	msg string
	err error // what the flag package or the value said
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.err }

// restateFlagError says the flag package's errors for an unknown flag and a
// flag without its value in the usage's words; others are returned as they
// are.
func restateFlagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		out := "unknown flag " + flagName(name)
		if near := nearestFlag(fs, name); near != "" {
			out += " (did you mean " + flagName(near) + "?)"
		}
		return &flagError{msg: out, err: err}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		out := flagName(name) + " needs a value"
		if f := fs.Lookup(name); f != nil {
			if arg, _ := flag.UnquoteUsage(f); arg != "" {
				out += " (" + flagName(name) + " " + arg + ")"
			}
		}
		return &flagError{msg: out, err: err}
	}
	return err
}

// nearestFlag returns the flag of fs that name is a typo of (within two
// edits, or sharing all but its last two letters, at least four), or "".
func nearestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := suggest.Distance(name, f.Name)
		if p := commonPrefix(name, f.Name); p >= 4 && p >= len(name)-2 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
