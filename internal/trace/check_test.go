package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestRunReportsEveryMalformedLine checks that Run checks the whole trace
// before running it: every malformed line is reported, in order, each with
// its number, and nothing is printed.
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
		`line 7: pick: not available in mode v5`,
		`line 8: send: outcome "broker:5": want broker:LAT:CODE`,
		`line 10: latencyMax: "-5" must not be negative`,
	}
	var out bytes.Buffer
	err := Run(strings.NewReader(src), &out, latency.ModeV5)
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("Run() error =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	if out.Len() != 0 {
		t.Errorf("Run() printed %q before reporting malformed lines, want nothing", out.String())
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
