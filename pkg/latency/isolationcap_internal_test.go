package latency

import (
	"testing"
	"time"
)

// TestWorseRules: each of the cap's release rules, in order, decides
// between two isolated brokers that every earlier rule ties, whatever the
// later rules say; the table lists the rules in worseRules' order, so a
// rule moved, added or removed fails it.
func TestWorseRules(t *testing.T) {
	// better loses every rule to worse; each case gives worse the better
	// key of every later rule, so only its own rule can decide.
	worst := rankKey{failed: true, unreachable: true, slowness: time.Second, until: 9, latency: 9, name: "a"}
	best := rankKey{failed: false, unreachable: false, slowness: 0, until: 1, latency: 1, name: "b"}
	cases := []struct {
		rule string
		set  func(k *rankKey, from rankKey) // copies this rule's key from from
	}{
		{"failed before slow", func(k *rankKey, f rankKey) { k.failed = f.failed }},
		{"unreachable before reachable", func(k *rankKey, f rankKey) { k.unreachable = f.unreachable }},
		{"slower last send", func(k *rankKey, f rankKey) { k.slowness = f.slowness }},
		{"longer remaining isolation", func(k *rankKey, f rankKey) { k.until = f.until }},
		{"higher latency", func(k *rankKey, f rankKey) { k.latency = f.latency }},
		{"name", func(k *rankKey, f rankKey) { k.name = f.name }},
	}
	if len(worseRules) != len(cases) {
		t.Fatalf("%d worseRules; want the %d the table lists", len(worseRules), len(cases))
	}
	for i, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			if worseRules[i].name != c.rule {
				t.Fatalf("worseRules[%d] is %q; want %q", i, worseRules[i].name, c.rule)
			}
			// Earlier rules tie (both take worst's keys), this one gives
			// a worst's key and b best's, later ones give b worst's.
			a, b := best, best
			for _, e := range cases[:i] {
				e.set(&a, worst)
				e.set(&b, worst)
			}
			c.set(&a, worst)
			for _, e := range cases[i+1:] {
				e.set(&b, worst)
			}
			if got := worseRules[i].compare(a, b); got >= 0 {
				t.Errorf("rule %q: compare(worse, better) = %d; want < 0", c.rule, got)
			}
			if got := worseFirst(a, b); got >= 0 {
				t.Errorf("worseFirst(worse, better) = %d; want < 0 (rule %q decides)", got, c.rule)
			}
			if got := worseFirst(b, a); got <= 0 {
				t.Errorf("worseFirst(better, worse) = %d; want > 0 (rule %q decides)", got, c.rule)
			}
			if got := worseFirst(a, a); got != 0 {
				t.Errorf("worseFirst(a, a) = %d; want 0", got)
			}
		})
	}
}
