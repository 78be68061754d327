package producer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestRouteErrorNoStutter: a cause that is itself ErrNoRoute with a reason
// (what a RouteSource says of a topic it does not know) is not named twice.
func TestRouteErrorNoStutter(t *testing.T) {
	err := &RouteError{Topic: "T", Err: fmt.Errorf("%w: topic not in the name server", ErrNoRoute)}
	got := err.Error()
	if want := `producer: no route for topic "T": topic not in the name server`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if strings.Count(got, "producer:") != 1 || !errors.Is(err, ErrNoRoute) {
		t.Errorf("Error() = %q stutters, or errors.Is(ErrNoRoute) = false", got)
	}
}

// TestBrokerErrorWithoutBroker: a BrokerError a transport made without the
// broker's name reads as a sentence, not "broker  answered" (the attempt's
// broker is what the logger and the SendError name).
func TestBrokerErrorWithoutBroker(t *testing.T) {
	if got, want := (&BrokerError{Code: 2, Remark: "busy"}).Error(), "producer: the broker answered code 2: busy"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&BrokerError{Broker: "b", Code: 2}).Error(), "producer: broker b answered code 2"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestRouteErrorCauses: a cause that is not ErrNoRoute, or is ErrNoRoute
// itself, reads as before; a cause that wraps ErrNoRoute under other words
// keeps them all.
func TestRouteErrorCauses(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"no cause", nil, `producer: no route for topic "T"`},
		{"ErrNoRoute itself", ErrNoRoute, `producer: no route for topic "T"`},
		{"another error", errors.New("name server down"), `producer: no route for topic "T": name server down`},
		{"ErrNoRoute wrapped after other words", fmt.Errorf("lookup: %w", ErrNoRoute), `producer: no route for topic "T": lookup: producer: no route`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&RouteError{Topic: "T", Err: tt.err}).Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}
