package sim

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestJSONTimeline: --json carries every strategy's isolation timeline
// (issue 25.3): for each broker ever isolated or unreachable its spans in
// seconds, to the microsecond, and whether the last was still open at the
// end; brokers never isolated nor unreachable are left out, and a strategy
// that isolated nothing has an empty object, not a missing one. On the
// golden mixed scenario (a blackhole, a flapping broker) some strategy
// isolates and some marks unreachable, so the check is not empty.
func TestJSONTimeline(t *testing.T) {
	rep := mustRun(t, loadTestScenario(t, "mixed"))
	var got struct {
		Strategies []struct {
			Name     string
			Timeline *map[string]struct {
				Isolated         [][2]float64 `json:"isolated_s"`
				Unreachable      [][2]float64 `json:"unreachable_s"`
				StillIsolated    bool         `json:"still_isolated"`
				StillUnreachable bool         `json:"still_unreachable"`
			} `json:"timeline"`
		}
	}
	if err := json.Unmarshal(jsonOf(t, rep), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Strategies) != len(rep.Results) {
		t.Fatalf("%d strategies in the JSON, want %d", len(got.Strategies), len(rep.Results))
	}
	near := func(s float64, d time.Duration) bool { return math.Abs(s-d.Seconds()) <= 0.5e-6 }
	spansMatch := func(js [][2]float64, spans []Span) bool {
		if len(js) != len(spans) {
			return false
		}
		for i, s := range spans {
			if !near(js[i][0], s.From) || !near(js[i][1], s.To) {
				return false
			}
		}
		return true
	}
	isolated, unreachable := 0, 0
	for i, res := range rep.Results {
		js := got.Strategies[i]
		if js.Timeline == nil {
			t.Fatalf("%s: no timeline in the JSON", res.Name)
		}
		tl := *js.Timeline
		want := 0
		for _, b := range res.Timeline {
			e, ok := tl[b.Name]
			if len(b.Isolated) == 0 && len(b.Unreachable) == 0 {
				if ok {
					t.Errorf("%s: %s is in the JSON timeline though never isolated nor unreachable", res.Name, b.Name)
				}
				continue
			}
			want++
			isolated += len(b.Isolated)
			unreachable += len(b.Unreachable)
			switch {
			case !ok:
				t.Errorf("%s: %s is not in the JSON timeline", res.Name, b.Name)
			case !spansMatch(e.Isolated, b.Isolated) || !spansMatch(e.Unreachable, b.Unreachable):
				t.Errorf("%s: %s's JSON spans %v / %v, want %v / %v", res.Name, b.Name, e.Isolated, e.Unreachable, b.Isolated, b.Unreachable)
			case e.StillIsolated != b.StillIsolated || e.StillUnreachable != b.StillUnreachable:
				t.Errorf("%s: %s still isolated/unreachable %v/%v in the JSON, want %v/%v", res.Name, b.Name,
					e.StillIsolated, e.StillUnreachable, b.StillIsolated, b.StillUnreachable)
			}
		}
		if len(tl) != want {
			t.Errorf("%s: %d brokers in the JSON timeline, want %d", res.Name, len(tl), want)
		}
	}
	if isolated == 0 || unreachable == 0 {
		t.Fatalf("%d isolations and %d unreachable spans in all: the test shows nothing", isolated, unreachable)
	}
}
