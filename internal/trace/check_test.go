package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestRunReportsEveryMalformedLine checks that Run runs a trace up to its
// first malformed line, printing what the lines before it print (as the
// reference does), and reads the rest only to check it: every malformed line
// is reported, in order, each with its number.
func TestRunReportsEveryMalformedLine(t *testing.T) {
	src := `# a trace with five malformed lines
route a:2,b:2
echo starts
clock x
selekt -
update a 10 maybe
pick
send SYNC ok:1 broker:5
enable true
latencyMax 0 -5
`
	want := []string{
		`line 4: clock: "x" is not a decimal number`,
		`line 5: unknown operation "selekt"`,
		`line 6: update: "maybe" is not true or false`,
		`line 7: pick: a v4 operation, not available in mode v5`,
		`line 8: send: outcome "broker:5": want broker:LAT:CODE`,
		`line 10: latencyMax: "-5" must not be negative`,
	}
	var out bytes.Buffer
	err := Run(strings.NewReader(src), &out, latency.ModeV5)
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("Run() error =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	if want := "route -> [a:0 a:1 b:0 b:1]\nstarts\n"; out.String() != want {
		t.Errorf("Run() printed %q, want what the lines before the first malformed one print, %q", out.String(), want)
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(want) {
		t.Fatalf("Run() error does not unwrap to %d errors", len(want))
	}
	for _, e := range joined.Unwrap() {
		if _, ok := e.(*LineError); !ok {
			t.Errorf("%v is a %T, want a *LineError", e, e)
		}
	}
}

// TestRunStopsAtTheFirstLineThatCannotRun checks that a well-formed trace
// still runs line by line and stops where its state makes a line fail,
// after printing what came before.
func TestRunStopsAtTheFirstLineThatCannotRun(t *testing.T) {
	src := "echo one\nselect -\necho never\nselect -\n"
	var out bytes.Buffer
	err := Run(strings.NewReader(src), &out, latency.ModeV5)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "no route yet") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Run() error = %v, want line 2 alone: no route yet", err)
	}
	if out.String() != "one\n" {
		t.Errorf("Run() printed %q, want %q", out.String(), "one\n")
	}
}

// TestRunChecksAfterAStop checks that a line that cannot run stops the
// trace, and the lines after it are still checked: their problems are
// reported with it.
func TestRunChecksAfterAStop(t *testing.T) {
	src := "echo one\nselect -\necho never\nclock soon\nroute a:1\nupdate a 1 maybe\n"
	var out bytes.Buffer
	err := Run(strings.NewReader(src), &out, latency.ModeV5)
	want := strings.Join([]string{
		`line 2: select: no route yet (use route or orderroute first)`,
		`line 4: clock: "soon" is not a decimal number`,
		`line 6: update: "maybe" is not true or false`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("Run() error =\n%v\nwant\n%s", err, want)
	}
	if out.String() != "one\n" {
		t.Errorf("Run() printed %q, want %q", out.String(), "one\n")
	}
}

// TestRunListsAtMostSoMany checks that a trace of garbage is reported in a
// bounded error that says it stopped listing.
func TestRunListsAtMostSoMany(t *testing.T) {
	src := strings.Repeat("nonsense\n", 200)
	err := Run(strings.NewReader(src), &bytes.Buffer{}, latency.ModeV4)
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxLineErrors+1 || !strings.Contains(lines[maxLineErrors], "only the first 50 are listed") {
		t.Errorf("Run() error has %d lines ending %q, want %d and a note", len(lines), lines[len(lines)-1], maxLineErrors+1)
	}
}

// TestRunModeError checks that an operation of the other mode is a
// *ModeError naming the mode that has it, so a caller can say how to run
// the trace instead.
func TestRunModeError(t *testing.T) {
	for _, tt := range []struct {
		mode, want latency.Mode
		src        string
	}{
		{latency.ModeV5, latency.ModeV4, "echo x\npick\n"},
		{latency.ModeV4, latency.ModeV5, "echo x\ndetectround\n"},
	} {
		err := Run(strings.NewReader(tt.src), &bytes.Buffer{}, tt.mode)
		var me *ModeError
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || !errors.As(err, &me) || me.Want != tt.want || me.Mode != tt.mode {
			t.Errorf("Run(%q, %s) error = %v, want line 2: a *ModeError wanting %s", tt.src, tt.mode, err, tt.want)
		}
	}
}

// TestRunLongLine checks that a line past MaxLineBytes is reported with
// its number, and the lines after it are still read and checked.
func TestRunLongLine(t *testing.T) {
	src := "echo one\n# " + strings.Repeat("x", MaxLineBytes) + "\necho two\nbogus\n"
	var out bytes.Buffer
	err := Run(strings.NewReader(src), &out, latency.ModeV5)
	want := `line 2: line longer than 1048576 bytes` + "\n" + `line 4: unknown operation "bogus"`
	if err == nil || err.Error() != want {
		t.Errorf("Run() error =\n%v\nwant\n%s", err, want)
	}
	if out.String() != "one\n" {
		t.Errorf("Run() printed %q, want %q", out.String(), "one\n")
	}
}

// TestRunEveryMode: every mode latency registers runs a trace, an
// operation is refused in a mode only when the mode lacks what it needs,
// and the mode a *ModeError names has it.
func TestRunEveryMode(t *testing.T) {
	for _, mode := range latency.Modes() {
		spec, _ := mode.Info()
		var out bytes.Buffer
		if err := Run(strings.NewReader("enable true\nroute a:2,b:2\nselect -\nitems\n"), &out, mode); err != nil {
			t.Errorf("mode %s: Run() error = %v", mode, err)
		}
		for op, sp := range ops {
			if sp.needs.in(spec) || sp.needs == resetIndexOp {
				continue
			}
			want := modeWith(sp.needs)
			if want == "" {
				t.Errorf("op %s: no registered mode has what it needs", op)
				continue
			}
			err := Run(strings.NewReader(op+"\n"), &bytes.Buffer{}, mode)
			var me *ModeError
			if !errors.As(err, &me) || me.Want != want {
				t.Errorf("mode %s, op %s: Run() error = %v, want a *ModeError wanting %s", mode, op, err, want)
			}
			if other, _ := want.Info(); !sp.needs.in(other) {
				t.Errorf("op %s: ModeError wants %s, which lacks it too", op, want)
			}
		}
	}
}
