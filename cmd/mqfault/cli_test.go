package main

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestHelp checks where help goes: asked for (-h, --help, help, help CMD,
// CMD --help) it is printed to stdout with exit 0, so `mqfault sim --help |
// less` shows it; a command line that is wrong gets it on stderr, exit 2.
func TestHelp(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		stdout     string // must start with, "" for nothing
		stderr     string // must contain, "" for nothing
		wantStderr bool
	}{
		{[]string{"-h"}, 0, "usage: mqfault COMMAND", "", false},
		{[]string{"--help"}, 0, "usage: mqfault COMMAND", "", false},
		{[]string{"help"}, 0, "usage: mqfault COMMAND", "", false},
		{[]string{"help", "sim"}, 0, "usage: mqfault sim [FLAGS]", "", false},
		{[]string{"help", "help"}, 0, "usage: mqfault COMMAND", "", false},
		{[]string{"help", "trace"}, 0, "usage: mqfault trace [FLAGS] FILE|-", "", false},
		{[]string{"help", "probe"}, 0, "usage: mqfault probe [FLAGS] ENDPOINT...", "", false},
		{[]string{"help", "version"}, 0, "usage: mqfault version", "", false},
		{[]string{"sim", "--help"}, 0, "usage: mqfault sim [FLAGS]", "", false},
		{[]string{"sim", "-h"}, 0, "usage: mqfault sim [FLAGS]", "", false},
		{[]string{"trace", "x.trace", "--help"}, 0, "usage: mqfault trace", "", false},
		{[]string{"probe", "-help"}, 0, "usage: mqfault probe", "", false},
		{nil, exitUsage, "", "usage: mqfault COMMAND", true},
		{[]string{"help", "bogus"}, exitUsage, "", `unknown command "bogus"`, true},
		{[]string{"help", "sim", "trace"}, exitUsage, "", "at most one command", true},
		{[]string{"bogus"}, exitUsage, "", `mqfault: unknown command "bogus"`, true},
		{[]string{"sim", "--bogus"}, exitUsage, "", "mqfault sim: unknown flag --bogus\nusage: mqfault sim [FLAGS]\nRun 'mqfault help sim' for every flag.\n", true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("mqfault %q = exit %d, want %d; stderr: %s", tt.args, code, tt.code, stderr.String())
			}
			if tt.stdout == "" && stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
			if !strings.HasPrefix(stdout.String(), tt.stdout) {
				t.Errorf("stdout = %q, want it to start with %q", stdout.String(), tt.stdout)
			}
			if !tt.wantStderr && stderr.Len() > 0 {
				t.Errorf("stderr = %q, want nothing", stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// TestUsageListsEveryFlag checks that the top-level usage, each command's
// usage and the README name every flag of every command, with its argument:
// the usages are generated from the flag sets, and this keeps them (and the
// README) from drifting.
func TestUsageListsEveryFlag(t *testing.T) {
	var top bytes.Buffer
	if code := run([]string{"help"}, nil, &top, io.Discard); code != 0 {
		t.Fatalf("mqfault help = exit %d", code)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	names := 0
	for _, c := range commands() {
		if !strings.Contains(top.String(), "\n  "+c.name+" ") {
			t.Errorf("mqfault help does not list the command %s", c.name)
		}
		if !strings.Contains(string(readme), "mqfault "+c.name) {
			t.Errorf("README.md does not show `mqfault %s`", c.name)
		}
		var own bytes.Buffer
		c.usage(&own)
		fs, _ := c.flagSet()
		fs.VisitAll(func(f *flag.Flag) {
			names++
			arg, _ := flag.UnquoteUsage(f)
			spelled := "--" + f.Name
			if len(f.Name) == 1 {
				spelled = "-" + f.Name
			}
			want := strings.TrimSpace(spelled + " " + arg)
			if !strings.Contains(top.String(), "  "+want+" ") {
				t.Errorf("mqfault help does not list %s %q", c.name, want)
			}
			if !strings.Contains(own.String(), "  "+want+" ") {
				t.Errorf("mqfault help %s does not list %q", c.name, want)
			}
			if !regexp.MustCompile(regexp.QuoteMeta(spelled) + `\b`).Match(readme) {
				t.Errorf("README.md does not mention mqfault %s %s", c.name, spelled)
			}
		})
	}
	// The flags the issue found missing, by name, so the test cannot pass
	// by listing nothing.
	for _, want := range []string{"--strategies NAMES", "--print-scenario", "--plugin-arg ARG", "--fail-unreachable", "--mode v5|v4"} {
		if !strings.Contains(top.String(), want) {
			t.Errorf("mqfault help does not list %q", want)
		}
	}
	if names < 14 {
		t.Errorf("the commands have %d flags, want at least 14", names)
	}
}

func TestVersionLine(t *testing.T) {
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "mqfault version unknown (the binary has no build information)"},
		{"release", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-01T09:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			"mqfault v1.2.0 (revision 0123456789ab, 2026-12-01T09:00:00Z; go1.26.0)"},
		{"dirty checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"mqfault (devel) (revision abc, modified; go1.26.0)"},
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.26.0"}, "mqfault (devel) (no VCS revision; go1.26.0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionLine(tt.bi); got != tt.want {
				t.Errorf("versionLine() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVersion checks that `mqfault version` and `--version` print the
// running binary's build information.
func TestVersion(t *testing.T) {
	bi, _ := debug.ReadBuildInfo()
	want := versionLine(bi) + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, nil, &stdout, &stderr); code != 0 || stdout.String() != want || stderr.Len() > 0 {
			t.Errorf("mqfault %v = exit %d, stdout %q, stderr %q; want 0, %q, nothing", args, code, stdout.String(), stderr.String(), want)
		}
	}
	var stderr bytes.Buffer
	if code := run([]string{"version", "extra"}, nil, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), `unexpected argument "extra"`) {
		t.Errorf("mqfault version extra = exit %d, stderr %q; want %d, unexpected argument", code, stderr.String(), exitUsage)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    []string // positional
		plugin  string
		verbose bool
		err     string
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, "", false, ""},
		{[]string{"a", "--plugin", "p", "b"}, []string{"a", "b"}, "p", false, ""},
		{[]string{"a", "b", "--plugin=p", "-v"}, []string{"a", "b"}, "p", true, ""},
		{[]string{"--plugin", "p", "--", "-v", "--plugin"}, []string{"-v", "--plugin"}, "p", false, ""},
		{[]string{"-v", "--", "-x"}, []string{"-x"}, "", true, ""},
		{[]string{"--plugin", "--", "a", "-v"}, []string{"a"}, "--", true, ""},
		{[]string{"a", "-", "b"}, []string{"a", "-", "b"}, "", false, ""},
		{[]string{"a", "--bogus"}, nil, "", false, "unknown flag --bogus"},
		{[]string{"a", "--plugi", "p"}, nil, "", false, "unknown flag --plugi (did you mean --plugin?)"},
		{[]string{"a", "--plugin"}, nil, "", false, "--plugin needs a value"},
		{[]string{"-v=maybe"}, nil, "", false, "-v maybe: want true or false"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			plugin := fs.String("plugin", "", "")
			verbose := fs.Bool("v", false, "")
			got, err := parseFlags(fs, tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("parseFlags(%q) error = %v, want %q", tt.args, err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) || *plugin != tt.plugin || *verbose != tt.verbose {
				t.Errorf("parseFlags(%q) = %q, %v (plugin %q, v %t); want %q (plugin %q, v %t)", tt.args, got, err, *plugin, *verbose, tt.want, tt.plugin, tt.verbose)
			}
		})
	}
}

// failWriter fails every write, as /dev/full does.
type failWriter struct{}

var errFull = errors.New("no space left on device")

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

// TestWriteError checks that output that cannot be written is an error exit
// (1), whichever command wrote it.
func TestWriteError(t *testing.T) {
	good := writeSimScenario(t, simScenario)
	for _, args := range [][]string{
		{"trace", "../../testdata/conformance/v4_basic.trace", "--mode", "v4"},
		{"sim", "--print-scenario"},
		{"sim", "--scenario", good, "--strategies", "v5"},
		{"sim", "--scenario", good, "--strategies", "v5", "--json"},
		{"version"},
		{"help"},
		{"help", "sim"},
		{"sim", "--help"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(args, nil, failWriter{}, &stderr)
			if code != exitFailure || !strings.Contains(stderr.String(), "writing output: no space left on device") {
				t.Errorf("mqfault %q > /dev/full = exit %d, stderr %q; want %d, writing output: no space left on device", args, code, stderr.String(), exitFailure)
			}
		})
	}
}

// TestTraceFlagsAfterFile checks that `trace FILE --mode v4` is `trace
// --mode v4 FILE`, and that -- lets a file name start with a dash.
func TestTraceFlagsAfterFile(t *testing.T) {
	const file = "../../testdata/conformance/v4_basic.trace"
	want, err := os.ReadFile("../../testdata/conformance/v4_basic.v4.out")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dashed := dir + "/-v4.trace"
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dashed, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"trace", "--mode", "v4", file},
		{"trace", file, "--mode", "v4"},
		{"trace", file, "--mode=v4"},
		{"trace", "--mode", "v4", "--", file},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, nil, &stdout, &stderr); code != 0 || !bytes.Equal(stdout.Bytes(), want) {
			t.Errorf("mqfault %q = exit %d, %d bytes (stderr %q); want 0 and the reference's %d bytes", args, code, stdout.Len(), stderr.String(), len(want))
		}
	}
	var stdout, stderr bytes.Buffer
	t.Chdir(dir)
	if code := run([]string{"trace", "--mode", "v4", "--", "-v4.trace"}, nil, &stdout, &stderr); code != 0 || !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("mqfault trace --mode v4 -- -v4.trace = exit %d (stderr %q); want 0 and the reference's output", code, stderr.String())
	}
}

// TestVersionOfBinary checks `mqfault version` in a built binary against
// the build information Go recorded in it.
func TestVersionOfBinary(t *testing.T) {
	bin := binary(t, mqfaultPkg)
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("mqfault %v: %v", args, err)
		}
		if got, want := string(out), versionLine(bi)+"\n"; got != want || !strings.HasPrefix(got, "mqfault ") || !strings.Contains(got, bi.GoVersion) {
			t.Errorf("mqfault %v = %q, want %q", args, got, want)
		}
	}
}

// TestTraceEveryMalformedLine checks that trace's problems are printed one
// per line, each naming the file and the line ("<stdin>:3: ..." for standard
// input), with what the lines before the first problem print on stdout.
func TestTraceEveryMalformedLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"trace", "-"}, strings.NewReader("echo hello\nbogus\nroute a:2\nselect - extra extra\nnope\n"), &stdout, &stderr)
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if code != exitUsage || stdout.String() != "hello\n" || len(lines) != 3 ||
		!strings.HasPrefix(lines[0], "<stdin>:2: ") || !strings.HasPrefix(lines[1], "<stdin>:4: ") || !strings.HasPrefix(lines[2], "<stdin>:5: ") {
		t.Errorf("mqfault trace - with three bad lines = exit %d, stdout %q, stderr %q; want %d, hello, lines 2, 4 and 5", code, stdout.String(), stderr.String(), exitUsage)
	}
}

// stutter returns a part of a message (the parts are what ": " separates)
// that a later part repeats, or starts with when it is one word ("producer:
// no route: producer: no route" repeats "producer"), or "".
func stutter(msg string) string {
	parts := strings.Split(msg, ": ")
	for i, p := range parts {
		for _, q := range parts[i+1:] {
			if p != "" && (q == p || (!strings.Contains(p, " ") && strings.HasPrefix(q, p+" "))) {
				return p
			}
		}
	}
	return ""
}

// TestFlagErrors checks what a bad flag says: the flag spelled as help spells
// it, and what a good value looks like; never the flag package's own words.
func TestFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // the first line of stderr
	}{
		{[]string{"probe", "--timeout", "500", "x"}, "mqfault probe: --timeout 500: a duration needs a unit, e.g. 500ms"},
		{[]string{"probe", "--timeout=1.5", "x"}, "mqfault probe: --timeout 1.5: a duration needs a unit, e.g. 1.5ms"},
		{[]string{"probe", "--every", "2x", "x"}, "mqfault probe: --every 2x: not a duration: write a number and a unit, e.g. 500ms, 2s or 1m30s"},
		{[]string{"probe", "-timeout", "", "x"}, `mqfault probe: --timeout "": not a duration: write a number and a unit, e.g. 500ms, 2s or 1m30s`},
		{[]string{"sim", "--seed", "abc"}, "mqfault sim: --seed abc: want a whole number from 0 up, e.g. 42"},
		{[]string{"sim", "--seed", "-1"}, "mqfault sim: --seed -1: want a whole number from 0 up, e.g. 42"},
		{[]string{"sim", "--json=maybe"}, "mqfault sim: --json maybe: want true or false"},
		{[]string{"probe", "-v=2", "x"}, "mqfault probe: -v 2: want true or false"},
		{[]string{"sim", "--bogus"}, "mqfault sim: unknown flag --bogus"},
		{[]string{"sim", "-bogus"}, "mqfault sim: unknown flag --bogus"},
		{[]string{"sim", "--strategy", "v5"}, "mqfault sim: unknown flag --strategy (did you mean --strategies?)"},
		{[]string{"sim", "--seed"}, "mqfault sim: --seed needs a value (--seed N)"},
		{[]string{"trace", "--mode"}, "mqfault trace: --mode needs a value (--mode v5|v4)"},
		{[]string{"probe", "x", "--plugin"}, "mqfault probe: --plugin needs a value (--plugin PATH)"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &stdout, &stderr)
			first, _, _ := strings.Cut(stderr.String(), "\n")
			if code != exitUsage || first != tt.want {
				t.Errorf("mqfault %q = exit %d, stderr %q; want %d and first %q", tt.args, code, stderr.String(), exitUsage, tt.want)
			}
			for _, bad := range []string{"invalid value", "parse error", "provided but not defined", " -" + strings.TrimLeft(tt.args[1], "-") + ":"} {
				if len(tt.args[1]) > 2 && strings.Contains(stderr.String(), bad) {
					t.Errorf("stderr %q says %q", stderr.String(), bad)
				}
			}
			if m := stutter(first); m != "" {
				t.Errorf("stderr %q stutters: %q", first, m)
			}
		})
	}
}

// TestTraceErrors checks trace's errors: each names the file (and the line),
// a v4-only operation under v5 (or the other way round) says which --mode
// runs it, and none stutters.
func TestTraceErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		path := dir + "/" + name
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	v4only := file("v4only.trace", "route a:2\nenable true\npick\nworst x\n")
	v5only := file("v5only.trace", "route a:2\ndetector true\n")
	state := file("state.trace", "echo one\nselect -\n")
	for _, tt := range []struct {
		args   []string
		stdout string
		stderr []string // its lines
	}{
		{[]string{"trace", v4only}, "route -> [a:0 a:1]\n", []string{
			v4only + ":3: pick: a v4 operation, not available in mode v5 (run the trace with --mode v4)",
			v4only + ":4: worst: a v4 operation, not available in mode v5 (run the trace with --mode v4)",
		}},
		{[]string{"trace", "--mode", "v4", v5only}, "route -> [a:0 a:1]\n", []string{
			v5only + ":2: detector: a v5 operation, not available in mode v4 (run the trace with --mode v5)",
		}},
		{[]string{"trace", state}, "one\n", []string{state + ":2: select: no route yet (use route or orderroute first)"}},
		{[]string{"trace", dir + "/missing.trace"}, "", []string{"mqfault trace: open " + dir + "/missing.trace: no such file or directory"}},
		{[]string{"trace", dir}, "", []string{"mqfault trace: read " + dir + ": is a directory"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &stdout, &stderr)
			got := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if code != exitUsage || stdout.String() != tt.stdout || !slices.Equal(got, tt.stderr) {
				t.Errorf("mqfault %q = exit %d, stdout %q, stderr\n%s\nwant %d, stdout %q, stderr\n%s",
					tt.args, code, stdout.String(), stderr.String(), exitUsage, tt.stdout, strings.Join(tt.stderr, "\n"))
			}
			for _, line := range got {
				if m := stutter(strings.TrimPrefix(line, dir)); m != "" {
					t.Errorf("stderr line %q stutters: %q", line, m)
				}
			}
		})
	}
}
