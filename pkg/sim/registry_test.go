package sim

import (
	"slices"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestEveryRegisteredPolicyHasItsAblation: each policy of latency's registry
// has the ablation it names, switching off exactly its off fields, with
// what it requires; and every latency ablation the preset offers switches
// off a registered policy or a detector setting.
func TestEveryRegisteredPolicyHasItsAblation(t *testing.T) {
	for _, p := range latency.Policies() {
		a, ok := findAblation(p.Ablation)
		if !ok {
			t.Errorf("policy %q: no ablation %q", p.Name, p.Ablation)
			continue
		}
		var want []string
		for _, f := range p.OffFields() {
			want = append(want, "latency.Config."+f)
		}
		if !slices.Equal(a.Fields, want) || a.Policy != p.Name || !slices.Equal(a.Requires, p.Requires) {
			t.Errorf("ablation %q: fields %v, policy %q, requires %v; want %v, %q, %v", a.Name, a.Fields, a.Policy, a.Requires, want, p.Name, p.Requires)
		}
		if err := a.Applies(preset()); err != nil {
			t.Errorf("ablation %q does not apply to the preset: %v", a.Name, err)
		}
	}
}
