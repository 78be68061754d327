package main

import (
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
