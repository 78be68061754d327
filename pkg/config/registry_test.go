package config

import (
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestEveryRegisteredPolicyKnobIsAKnob: each knob of latency's policy
// registry is a knob of the table, with its doc, bound to its field of
// Strategy.
func TestEveryRegisteredPolicyKnobIsAKnob(t *testing.T) {
	for _, p := range latency.Policies() {
		for _, pk := range p.Knobs {
			k, ok := lookupKnob(pk.Key)
			if !ok {
				t.Errorf("policy %q: knob %q is not in the table", p.Name, pk.Key)
				continue
			}
			if k.doc != pk.Doc || k.field != "Strategy."+pk.Field {
				t.Errorf("knob %q: doc %q, field %q; want %q, %q", pk.Key, k.doc, k.field, pk.Doc, "Strategy."+pk.Field)
			}
		}
	}
}

// TestPolicyKnobsNested: a policy's knobs set its nested settings in
// Strategy. On a reference preset a zero value leaves them nil (the policy
// off) and another value gives the policy settings of its own; on the
// mqfault preset a zero first knob turns the policy off, as a file's
// "isolation_backoff: 0" always did; a Config copied before a Set keeps
// its value; and Get reads 0 for a policy without settings.
func TestPolicyKnobsNested(t *testing.T) {
	r := Reference5()
	if err := r.Set("isolation_backoff", "0"); err != nil || r.Strategy.Backoff != nil {
		t.Errorf("Set(isolation_backoff, 0) on reference5: Backoff = %+v, err %v; want nil", r.Strategy.Backoff, err)
	}
	if got, _ := r.Get("max_isolation"); got != "0s" {
		t.Errorf("Get(max_isolation) on reference5 = %q, want 0s", got)
	}
	if err := r.Set("max_isolation", "30s"); err != nil || r.Strategy.Backoff == nil || *r.Strategy.Backoff != (latency.BackoffConfig{Max: 30 * time.Second}) {
		t.Errorf("Set(max_isolation, 30s) on reference5: Backoff = %+v, err %v; want {Max: 30s}", r.Strategy.Backoff, err)
	}

	d := DefaultConfig()
	before := d
	if err := d.Set("isolation_backoff", "0"); err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("mqfault preset with isolation_backoff 0: Validate() = %v", err)
	}
	for _, p := range latency.Policies() {
		if p.Ablation == "backoff" && p.On(d.Strategy) {
			t.Errorf("backoff on with isolation_backoff 0")
		}
	}
	if before.Strategy.Backoff.Multiplier != 2 {
		t.Errorf("Set changed a copy made before it: Backoff = %+v", before.Strategy.Backoff)
	}
}
