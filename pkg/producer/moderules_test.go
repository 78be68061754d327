package producer

import (
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestClassRulesEveryClass walks every latency.Class for every registered
// mode: each has a send-loop row with a sync rule, an async rule and a
// stop, and neither a mode's send rules nor classEnds have a row for a class
// latency does not have. A class added to latency fails here until each
// mode's spec says what the send loop does with it and classEnds how it
// ends a send.
func TestClassRulesEveryClass(t *testing.T) {
	modes := latency.Modes()
	if len(modes) == 0 {
		t.Fatal("no mode registered")
	}
	classes := latency.Classes()
	if len(classEnds) != len(classes) {
		t.Errorf("classEnds has %d rows, latency has %d classes", len(classEnds), len(classes))
	}
	for _, mode := range modes {
		rules, ok := rulesFor(mode)
		if !ok {
			t.Errorf("mode %s: registered, but rulesFor does not know it", mode)
			continue
		}
		if len(rules.classes) != len(classes) {
			t.Errorf("mode %s: %d class rows, latency has %d classes", mode, len(rules.classes), len(classes))
		}
		for _, c := range classes {
			if int(c) >= len(rules.classes) {
				t.Errorf("mode %s: no send-loop row for class %s", mode, c)
				continue
			}
			r := rules.classes[c]
			switch {
			case r.sync == latency.NextNone || r.sync == latency.NextUnsent:
				t.Errorf("mode %s, class %s: sync rule %d, want answer, retry, retry code or end", mode, c, r.sync)
			case r.async == latency.NextNone:
				t.Errorf("mode %s, class %s: no async rule", mode, c)
			case r.stop == StopNone || r.stop == StopCallTimeout || r.stop == StopAborted:
				t.Errorf("mode %s, class %s: stop %s, want how an attempt of this class ends a send", mode, c, r.stop)
			case (r.sync == latency.NextAnswer) != (r.stop == StopAnswered):
				t.Errorf("mode %s, class %s: sync rule %d with stop %s: an answer, and only an answer, ends a send answered", mode, c, r.sync, r.stop)
			}
			if got := rules.classes.class(c); got != r {
				t.Errorf("mode %s: class(%s) = %+v, want its row %+v", mode, c, got, r)
			}
			if got := (Outcome{Class: c}).FailedStop(); got != r.stop {
				t.Errorf("mode %s, class %s: FailedStop() = %s, want the mode's stop %s", mode, c, got, r.stop)
			}
		}
	}
	if _, ok := rulesFor("v3"); ok {
		t.Error(`rulesFor("v3") = ok, want an unknown mode refused`)
	}
}

// TestClassRulesUnknownClass: a class value outside latency.Classes is a
// transport failure to the send loop, as it is to latency.UpdateFor.
func TestClassRulesUnknownClass(t *testing.T) {
	for _, mode := range latency.Modes() {
		rules, _ := rulesFor(mode)
		if got, want := rules.classes.class(latency.Class(200)), rules.classes[latency.ClassTransportFailed]; got != want {
			t.Errorf("mode %s: class(200) = %+v, want the transport failure row %+v", mode, got, want)
		}
	}
	if got := (Outcome{Class: latency.Class(200)}).FailedStop(); got != StopFailed {
		t.Errorf("FailedStop() of an unknown class = %s, want %s", got, StopFailed)
	}
}
