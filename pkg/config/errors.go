package config

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid is what every configuration error of this package matches with
// errors.Is: an *Error, whether a value did not parse, was out of range, or a
// file or variable named no knob.
var ErrInvalid = errors.New("config: invalid configuration")

// Error says which knob is wrong, with which value, where that value was
// written and why. It matches ErrInvalid and wraps the underlying error, if
// any (a *latency.ConfigError, a *producer.ConfigError, a YAML syntax error).
type Error struct {
	// Knob is the knob's name ("detect_timeout"); empty when the error is
	// not about one knob (a file that does not parse).
	Knob string
	// Value is the value as written (or, from Validate, as Get formats it).
	Value string
	// Source says where the value was written: an environment variable
	// ("MQFAULT_DETECT_TIMEOUT"), a file position ("mqfault.yaml:3"), or
	// empty for a value set in code.
	Source string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, or nil.
	Err error

	related string // a knob Reason speaks of, whose own problem explains this one
}

// Error returns a one-line message naming the knob, the value (left out
// when there is none, as for a list where one value belongs), the source and
// the reason, such as
// `config: detect_timeout = "-1s" (MQFAULT_DETECT_TIMEOUT): must be positive`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.Knob != "" {
		b.WriteString(e.Knob)
		if e.Value != "" {
			b.WriteString(" = ")
			b.WriteString(strconv.Quote(e.Value))
		}
		if e.Source != "" {
			b.WriteString(" (")
			b.WriteString(e.Source)
			b.WriteString(")")
		}
	} else if e.Source != "" {
		b.WriteString(e.Source)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }
