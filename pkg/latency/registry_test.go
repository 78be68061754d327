package latency_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

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
				checkKnob(t, k)
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

// checkKnob: k's Set writes the field its Field names, Get reads it back;
// setting a zero value on a Config without the policy's settings leaves
// them nil; Set gives the Config its own copy of the settings, so a Config
// copied before does not change.
func checkKnob(t *testing.T, k latency.PolicyKnob) {
	t.Helper()
	var c latency.Config
	zero := k.Get(c)
	k.Set(&c, zero)
	if !reflect.DeepEqual(c, latency.Config{}) {
		t.Errorf("knob %s: setting %v on a zero Config changed it: %+v", k.Key, zero, c)
	}
	one := map[any]any{0.0: 0.5, 0: 7, false: true, time.Duration(0): time.Second}[zero]
	if one == nil {
		t.Fatalf("knob %s: Get returns a %T", k.Key, zero)
	}
	k.Set(&c, one)
	if got := k.Get(c); got != one {
		t.Errorf("knob %s: Get after Set(%v) = %v", k.Key, one, got)
	}
	if got := fieldAt(reflect.ValueOf(c), k.Field); !got.IsValid() || got.Interface() != one {
		t.Errorf("knob %s: Config.%s after Set(%v) = %v; want the knob to bind it", k.Key, k.Field, one, got)
	}
	before := c
	k.Set(&c, zero)
	if got := k.Get(before); got != one {
		t.Errorf("knob %s: Set on a copy changed the original's value to %v", k.Key, got)
	}
}

// fieldAt is the field at path ("Backoff.Max") in v, through pointers; the
// zero Value when a pointer on the way is nil or a name is no field.
func fieldAt(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}
		}
		if v = v.FieldByName(name); !v.IsValid() {
			return v
		}
	}
	return v
}
