package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// ErrReservedName is what CustomStrategy's error matches (errors.Is) when
// the name is a built-in strategy's or an ablation's: a row of one's own
// beside theirs must not be mistaken for one of them.
var ErrReservedName = errors.New("sim: the name of a built-in strategy or ablation")

// CustomStrategy returns a contender of one's own beside the presets: the
// settings l and p (config.Config's Strategy and Producer, say) under name,
// as `mqfault sim --config FILE` adds a row. As for every strategy, the
// send timeout of p is replaced by the scenario's send_timeout.
//
// It returns an error when name is empty or holds a space or a comma (the
// --strategies list and --baseline could not name it), when it is a name
// of StrategyNames or of an ablation of Ablations (wrapping
// ErrReservedName), or with every problem latency.Config.Validate and
// producer.Config.Validate find in l and p.
func CustomStrategy(name, summary string, l latency.Config, p producer.Config) (Strategy, error) {
	switch {
	case name == "":
		return Strategy{}, errors.New("sim: a strategy needs a name")
	case strings.ContainsFunc(name, func(r rune) bool { return r == ',' || unicode.IsSpace(r) || unicode.IsControl(r) }):
		return Strategy{}, fmt.Errorf("sim: strategy name %q has a space or a comma", name)
	case slices.Contains(reservedNames(), name):
		return Strategy{}, fmt.Errorf("strategy name %q: %w", name, ErrReservedName)
	}
	if err := errors.Join(l.Validate(), p.Validate()); err != nil {
		return Strategy{}, fmt.Errorf("strategy %s: %w", name, err)
	}
	return Strategy{Name: name, Summary: summary, Latency: l, Producer: p}, nil
}

// reservedNames returns the names of the built-in strategies and of every
// ablation, whether or not it applies to the preset now.
func reservedNames() []string {
	names := StrategyNames()
	for _, a := range ablations {
		names = append(names, a.StrategyName())
	}
	return names
}
