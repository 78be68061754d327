package latency_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestPolicyRegistry walks the registry: every policy has a name, an
// ablation name, documented knobs bound to the fields they name, is on in
// the preset (DefaultConfig), off in the reference modes, and its off
// switch turns it off changing exactly the fields it names, leaving a valid
// Config.
func TestPolicyRegistry(t *testing.T) {
	pols := latency.Policies()
	if len(pols) == 0 {
		t.Fatal("Policies() is empty")
	}
	names, ablations, keys := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range pols {
		t.Run(p.Ablation, func(t *testing.T) {
			if p.Name == "" || p.Ablation == "" || names[p.Name] || ablations[p.Ablation] {
				t.Errorf("name %q, ablation %q: want both set and unique", p.Name, p.Ablation)
			}
			names[p.Name], ablations[p.Ablation] = true, true
			if len(p.Knobs) == 0 || len(p.OffFields()) == 0 {
				t.Fatalf("knobs %v, off fields %v: want a knob and an off switch", p.Knobs, p.OffFields())
			}
			for _, k := range p.Knobs {
				if k.Key == "" || k.Doc == "" || keys[k.Key] {
					t.Errorf("knob %+v: want a unique key and a doc", k)
				}
				keys[k.Key] = true
				var c latency.Config
				f := reflect.ValueOf(&c).Elem().FieldByName(k.Field)
				if !f.IsValid() || f.Addr().Interface() != k.Bind(&c) {
					t.Errorf("knob %s binds another field than %q", k.Key, k.Field)
				}
			}
			def := latency.DefaultConfig()
			if !p.On(def) {
				t.Errorf("off in DefaultConfig, want on in the preset")
			}
			for _, ref := range []latency.Config{latency.Reference5(), latency.Reference4()} {
				if p.On(ref) {
					t.Errorf("on in the reference mode %s, want off", ref.Mode)
				}
			}
			off := def
			p.Off(&off)
			if p.On(off) {
				t.Errorf("On after Off = true")
			}
			if err := off.Validate(); err != nil {
				t.Errorf("DefaultConfig with the policy off is invalid: %v", err)
			}
			var changed []string
			dv, ov := reflect.ValueOf(def), reflect.ValueOf(off)
			for i := range dv.NumField() {
				if dv.Type().Field(i).Name == "Filters" || dv.Type().Field(i).Name == "Durations" {
					continue
				}
				if !reflect.DeepEqual(dv.Field(i).Interface(), ov.Field(i).Interface()) {
					changed = append(changed, dv.Type().Field(i).Name)
				}
			}
			if !slices.Equal(changed, p.OffFields()) {
				t.Errorf("Off changes %v, want exactly %v", changed, p.OffFields())
			}
		})
	}
}
