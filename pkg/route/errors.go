package route

import (
	"errors"
	"strconv"
)

// ErrInvalidRoute is what every route data error matches with errors.Is.
var ErrInvalidRoute = errors.New("route: invalid route data")

// Error says what is wrong with route data: the topic, the field, the value
// and why. It matches ErrInvalidRoute.
type Error struct {
	Topic  string
	Field  string
	Value  string
	Reason string
}

func (e *Error) Error() string {
	s := "route: topic " + strconv.Quote(e.Topic) + ": " + e.Field
	if e.Value != "" {
		s += " " + strconv.Quote(e.Value)
	}
	return s + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalidRoute) true.
func (e *Error) Is(target error) bool { return target == ErrInvalidRoute }
