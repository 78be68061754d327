package config

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode feeds the file loader arbitrary documents. It must never panic;
// an error must be an *Error that leaves the Config unchanged; a document it
// accepts must survive Encode and Decode unchanged, and Validate must answer
// (nil or an *Error naming a knob). The committed corpus is in
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(fullYAML))
	f.Add([]byte(fullJSON))
	f.Add(DefaultConfig().Encode())
	f.Add(Reference4().Encode())
	f.Add([]byte("durations: {latency_max: [1s, 2s], not_available: [3s, 4s]}\nretry_codes: []\n"))
	f.Add([]byte("a: &x [1, *x]\n"))
	f.Add([]byte("timeout: !!binary aGVsbG8=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := DefaultConfig()
		before := c
		err := c.Decode(data, "fuzz")
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Decode() error = %v (%T), want an *Error", err, err)
			}
			if !reflect.DeepEqual(c, before) {
				t.Fatalf("Decode() changed the config on error")
			}
			return
		}
		if verr := c.Validate(); verr != nil {
			var ce *Error
			if !errors.As(verr, &ce) || ce.Knob == "" {
				t.Fatalf("Validate() error = %v, want an *Error naming a knob", verr)
			}
		}
		doc := c.Encode()
		got := Reference4()
		if err := got.Decode(doc, "encoded"); err != nil {
			t.Fatalf("Decode(Encode()) error = %v\n%s", err, doc)
		}
		for _, k := range Knobs() {
			if a, b := mustGet(got, k.Name), mustGet(c, k.Name); a != b {
				t.Fatalf("after Encode and Decode %s = %q, want %q\n%s", k.Name, a, b, doc)
			}
		}
	})
}
