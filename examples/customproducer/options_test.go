package main

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOptionsValidate checks that flags out of range are refused, every one
// named in one error, instead of a run that sends nothing and exits 0.
func TestOptionsValidate(t *testing.T) {
	good := options{Duration: 10 * time.Second, DeadAfter: time.Second, SlowDelay: time.Second, Senders: 4, Interval: 10 * time.Millisecond}
	if err := good.validate(nil); err != nil {
		t.Fatalf("validate(defaults) = %v, want nil", err)
	}
	bad := options{Duration: -5 * time.Second, DeadAfter: -time.Second, SlowDelay: -1, Senders: 0, Interval: -time.Millisecond}
	want := []string{
		"customproducer: -duration -5s: must be positive (how long to send)",
		"customproducer: -dead-after -1s: must not be negative",
		"customproducer: -slow -1ns: must not be negative",
		"customproducer: -senders 0: must be at least 1",
		"customproducer: -interval -1ms: must not be negative",
		`customproducer: unexpected argument "extra": the program takes only flags`,
	}
	if err := bad.validate([]string{"extra"}); err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("validate() =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	zero := good
	zero.Duration = 0
	if err := zero.validate(nil); err == nil {
		t.Error("validate(-duration 0) = nil, want an error")
	}
}

// TestHoldFlag: -hold takes a duration with its unit or "forever"; anything
// else is refused saying what a good value looks like, and a negative one
// by validate.
func TestHoldFlag(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"forever", holdForever, ""},
		{"30s", 30 * time.Second, ""},
		{"0", 0, ""},
		{"30", 0, "a duration needs a unit, e.g. 30s, or forever"},
		{"soon", 0, "a duration such as 30s, or forever"},
	} {
		var d time.Duration
		err := holdValue{&d}.Set(tt.in)
		switch {
		case tt.err == "" && (err != nil || d != tt.want):
			t.Errorf("Set(%q) = %v, %v; want %v", tt.in, d, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Set(%q) error = %v, want it to say %q", tt.in, err, tt.err)
		}
	}
	if s := (holdValue{new(time.Duration)}).String(); s != "0s" {
		t.Errorf("the default prints as %q, want 0s", s)
	}
	d := holdForever
	if s := (holdValue{&d}).String(); s != "forever" {
		t.Errorf("forever prints as %q", s)
	}
	o := options{Duration: time.Second, Senders: 1, Hold: -time.Second}
	if err := o.validate(nil); err == nil || !strings.Contains(err.Error(), "-hold -1s: must not be negative") {
		t.Errorf("validate(-hold -1s) = %v, want it refused", err)
	}
}

// TestReadmeFlags: README.md's flag table lists exactly the program's flags,
// each with its default.
func TestReadmeFlags(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `-([a-z-]+)` \\| ([^|]*) \\|")
	listed := map[string]string{}
	for _, l := range strings.Split(string(text), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			listed[m[1]] = strings.TrimSpace(m[2])
		}
	}
	var opts options
	fs := newFlags(&opts)
	fs.VisitAll(func(f *flag.Flag) {
		want := f.DefValue
		if want == "" {
			want = "none"
		}
		if got, ok := listed[f.Name]; !ok {
			t.Errorf("README.md's flag table does not list -%s", f.Name)
		} else if got != want {
			t.Errorf("README.md gives -%s the default %q, the program %q", f.Name, got, want)
		}
		delete(listed, f.Name)
	})
	for name := range listed {
		t.Errorf("README.md lists a flag -%s the program does not have", name)
	}
}
