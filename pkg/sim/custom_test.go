package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// TestCustomStrategy: a strategy of one's own runs its settings (v5 with the
// detector's settings under another name gives v5+detector's numbers), and
// its name may be none of the built-in strategies' or ablations' (issue
// 25.4), nor empty, nor one that --strategies could not name; invalid
// settings are refused with every problem.
func TestCustomStrategy(t *testing.T) {
	v5d := Strategies()[3]
	if v5d.Name != "v5+detector" {
		t.Fatalf("Strategies()[3] is %s", v5d.Name)
	}
	mine, err := CustomStrategy("mine", "my settings", v5d.Latency, v5d.Producer)
	if err != nil {
		t.Fatal(err)
	}
	rep := mustRun(t, loadTestScenario(t, "small"), WithStrategies(v5d, mine))
	got, want := rep.Results[1], rep.Results[0]
	if got.Name != "mine" || got.Summary != "my settings" {
		t.Errorf("the row is %q (%q), want mine (my settings)", got.Name, got.Summary)
	}
	got.Name, got.Summary, got.Wall, want.Name, want.Summary, want.Wall = "", "", 0, "", "", 0
	if !sameNumbers(&got, &want) {
		t.Errorf("v5+detector's settings under another name gave other numbers: %+v, want %+v", got, want)
	}

	reserved := append(StrategyNames(), "mqfault-retry-budget")
	for _, a := range Ablations() {
		reserved = append(reserved, a.StrategyName())
	}
	for _, name := range reserved {
		if _, err := CustomStrategy(name, "", v5d.Latency, v5d.Producer); !errors.Is(err, ErrReservedName) || !strings.Contains(err.Error(), name) {
			t.Errorf("CustomStrategy(%q) error = %v, want ErrReservedName naming it", name, err)
		}
	}
	for _, name := range []string{"", "my settings", "a,b", "tab\there"} {
		if _, err := CustomStrategy(name, "", v5d.Latency, v5d.Producer); err == nil || errors.Is(err, ErrReservedName) {
			t.Errorf("CustomStrategy(%q) error = %v, want one about the name", name, err)
		}
	}
	bad := v5d.Latency
	bad.DetectTimeout = -1
	badP := v5d.Producer
	badP.RetryTimes = -1
	_, err = CustomStrategy("mine", "", bad, badP)
	if !errors.Is(err, latency.ErrInvalidConfig) || !errors.Is(err, producer.ErrInvalidConfig) {
		t.Errorf("CustomStrategy with two invalid settings: error = %v, want both configs' errors", err)
	}
}
