package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Score is what a verdict compares of a strategy's run: its failed sends
// and the p99 latency of its whole sends.
type Score struct {
	Failed int64
	P99    time.Duration
}

// Score returns the result's failed sends and p99.
func (r *Result) Score() Score { return Score{Failed: r.Failed, P99: r.Latency.P99} }

// Verdict is what a Rule says of a run against a baseline.
type Verdict int8

// The verdicts.
const (
	Neutral Verdict = iota // neither worse nor better
	Worse                  // past the rule's worse bound on failed sends or p99
	Better                 // not worse, and past the better bound on one of them
)

func (v Verdict) String() string {
	switch v {
	case Worse:
		return "worse"
	case Better:
		return "better"
	}
	return "neutral"
}

// Rule is the one rule by which a strategy's run is judged against a
// baseline's, on failed sends and p99. A run is worse when it fails more
// than FailedRatio times the baseline's failed sends plus FailedSlack, or
// its p99 is more than P99Ratio times the baseline's; better when it is not
// worse and fails fewer than BetterRatio times the baseline's sends or has
// a p99 below BetterRatio times the baseline's; neutral otherwise.
type Rule struct {
	FailedRatio float64
	FailedSlack int64
	P99Ratio    float64
	BetterRatio float64
}

// DefaultRule is the rule of `mqfault sim --family`, `--seeds` and the
// must-reach test: worse past 5% and 5 sends more failed or 5% more p99,
// better at 20% fewer failed sends or 20% lower p99.
var DefaultRule = Rule{FailedRatio: 1.05, FailedSlack: 5, P99Ratio: 1.05, BetterRatio: 0.8}

// Judgement says which bound of a Rule a run crossed, column by column.
type Judgement struct {
	FailedWorse, P99Worse   bool // past the worse bound
	FailedBetter, P99Better bool // past the better bound
}

// Verdict returns worse when a worse bound is crossed, else better when a
// better bound is, else neutral.
func (j Judgement) Verdict() Verdict {
	switch {
	case j.FailedWorse || j.P99Worse:
		return Worse
	case j.FailedBetter || j.P99Better:
		return Better
	}
	return Neutral
}

// Judge compares got with base under the rule. A baseline without failed
// sends makes no run better on failed sends.
func (r Rule) Judge(got, base Score) Judgement {
	return Judgement{
		FailedWorse:  float64(got.Failed) > r.FailedRatio*float64(base.Failed)+float64(r.FailedSlack),
		P99Worse:     float64(got.P99) > r.P99Ratio*float64(base.P99),
		FailedBetter: float64(got.Failed) < r.BetterRatio*float64(base.Failed),
		P99Better:    float64(got.P99) < r.BetterRatio*float64(base.P99),
	}
}

// String states the rule in words, as the tables print it.
func (r Rule) String() string {
	return fmt.Sprintf("worse: failed > %g x baseline + %d or p99 > %g x baseline; better: failed < %g x or p99 < %g x baseline; else neutral",
		r.FailedRatio, r.FailedSlack, r.P99Ratio, r.BetterRatio, r.BetterRatio)
}

// DefaultBaseline names the strategies whose better figures, column by
// column, are the default baseline: the reference with and without its
// detector.
var DefaultBaseline = []string{"v5", "v5+detector"}

// Baseline is what runs are judged against: the strategies it names, of
// which it takes, column by column, the better figure (the fewer failed
// sends, the lower p99). One name is that strategy's figures.
type Baseline []string

// String names the baseline: "v5" or "the better of v5 and v5+detector".
func (b Baseline) String() string {
	switch len(b) {
	case 0:
		return "none"
	case 1:
		return b[0]
	}
	return "the better of " + strings.Join(b[:len(b)-1], ", ") + " and " + b[len(b)-1] + " in each column"
}

// indices returns the positions of the baseline's strategies among
// strategies, or an error naming one that is missing.
func (b Baseline) indices(strategies []Strategy) ([]int, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("sim: the baseline names no strategy")
	}
	out := make([]int, len(b))
	for k, name := range b {
		i := slices.IndexFunc(strategies, func(s Strategy) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("sim: the baseline %s is not among the strategies to run", name)
		}
		out[k] = i
	}
	return out, nil
}

// score returns the baseline's figures in results: the fewest failed sends
// and the lowest p99 of the results at idx.
func baselineScore(results []Result, idx []int) Score {
	s := results[idx[0]].Score()
	for _, i := range idx[1:] {
		o := results[i].Score()
		s.Failed, s.P99 = min(s.Failed, o.Failed), min(s.P99, o.P99)
	}
	return s
}
