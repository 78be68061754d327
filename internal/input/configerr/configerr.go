// Package configerr holds the one configuration error type of mqfault's
// packages: pkg/latency, pkg/producer and plugins/host each export it as
// their ConfigError (a type alias), so a caller finds any of them with one
// errors.As, and pkg/config maps one to its knob by the Field it carries.
package configerr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error names the setting that is wrong, its value and why. It matches the
// package sentinel in Err (latency.ErrInvalidConfig, ...) with errors.Is.
//
// A Config's Validate joins one *Error per problem (errors.Join), so every
// problem is reported at once; errors.As finds the first.
type Error struct {
	// Field names the setting: a field of the package's Config, as Go
	// spells it ("DetectTimeout"), or a constructor's argument
	// ("transport", "latencyMax").
	Field string
	// Item says which item of a list setting is wrong, counted from 1 (so
	// that 0 is the setting as a whole); Error prints it as a Go index,
	// Field[Item-1].
	Item int
	// Value is the value found.
	Value any
	// Reason says what is wrong with it. It may speak of one other setting,
	// Related.
	Reason string
	// Related names the other setting Reason speaks of, by the same
	// convention as Field ("Backoff.Multiplier" in "must be positive while
	// Backoff.Multiplier is on"); "" when there is none. A caller that shows
	// settings by other names (pkg/config's knobs) renames it in Reason.
	Related string
	// Err is the sentinel the error matches: the package's
	// ErrInvalidConfig.
	Err error
}

// Error returns "pkg: Field = Value: Reason", such as
// "latency: DetectTimeout = -1s: must be positive" or
// "latency: latencyMax[1] = 100ms: ...", where pkg is the text of Err before
// its first colon ("latency" for "latency: invalid configuration").
func (e *Error) Error() string {
	var b strings.Builder
	if e.Err != nil {
		pkg, _, _ := strings.Cut(e.Err.Error(), ":")
		b.WriteString(pkg)
		b.WriteString(": ")
	}
	b.WriteString(e.Field)
	if e.Item > 0 {
		b.WriteString("[")
		b.WriteString(strconv.Itoa(e.Item - 1))
		b.WriteString("]")
	}
	b.WriteString(" = ")
	fmt.Fprint(&b, e.Value)
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns the sentinel, so errors.Is(err, Err) holds.
func (e *Error) Unwrap() error { return e.Err }

// List collects the problems of one validation.
type List struct{ errs []error }

// Add records one problem.
func (l *List) Add(e *Error) { l.errs = append(l.errs, e) }

// Err returns nil, the one problem, or every problem joined (one per line).
func (l *List) Err() error {
	switch len(l.errs) {
	case 0:
		return nil
	case 1:
		return l.errs[0]
	}
	return errors.Join(l.errs...)
}
