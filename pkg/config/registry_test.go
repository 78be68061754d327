package config

import (
	"testing"

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
