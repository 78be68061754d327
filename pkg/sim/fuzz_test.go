package sim

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the scenario loader (seeded with the
// corpus under testdata/fuzz/FuzzParse: the default and golden scenarios
// and broken variants). Parse must not panic; an error must match
// ErrInvalidScenario and carry a *FieldError; a scenario it accepts must
// pass Validate, and parsing the same bytes again must give the same
// scenario.
func FuzzParse(f *testing.F) {
	f.Add(defaultYAML)
	f.Add([]byte(validYAML))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidScenario) {
				t.Fatalf("Parse() error %v does not match ErrInvalidScenario", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Parse() error %v carries no *FieldError", err)
			}
			if s != nil {
				t.Fatalf("Parse() = %+v with an error, want nil", s)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse() accepted a scenario that Validate refuses: %v", err)
		}
		again, err := Parse(data)
		if err != nil || !reflect.DeepEqual(s, again) {
			t.Fatalf("Parse() twice = %+v, %v; want %+v", again, err, s)
		}
	})
}
