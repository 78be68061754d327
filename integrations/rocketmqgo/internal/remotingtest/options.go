package remotingtest

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/mqfault/mqfault/pkg/clock"
)

// ErrClosed is returned by the methods of a server that has been closed.
var ErrClosed = errors.New("remotingtest: server closed")

// Option configures a NameServer or a Broker.
type Option func(*options) error

type options struct {
	clock    clock.Clock
	logger   *slog.Logger
	maxFrame int
	cluster  string
}

func defaultOptions() options {
	return options{
		clock:    clock.Real{},
		logger:   slog.Default(),
		maxFrame: DefaultMaxFrameSize,
		cluster:  "DefaultCluster",
	}
}

func buildOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, apply := range opts {
		if apply == nil {
			continue
		}
		if err := apply(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// WithClock makes the server read the time of its log entries and wait out
// Fault.Delay on c (default clock.Real). With a clock.Manual a
// delayed answer goes out when the test advances the clock past it; the
// delay's timer is set before the request's log entry appears, so a test can
// Await the entry, then advance.
func WithClock(c clock.Clock) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("remotingtest: WithClock(nil)")
		}
		o.clock = c
		return nil
	}
}

// WithLogger sets where the server reports malformed frames and connection
// trouble (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("remotingtest: WithLogger(nil)")
		}
		o.logger = l
		return nil
	}
}

// WithMaxFrameSize sets the largest frame the server reads (default
// DefaultMaxFrameSize); a larger one closes its connection as malformed.
func WithMaxFrameSize(n int) Option {
	return func(o *options) error {
		if n < 8 {
			return fmt.Errorf("remotingtest: WithMaxFrameSize(%d): a frame needs at least 8 bytes", n)
		}
		o.maxFrame = n
		return nil
	}
}

// WithCluster sets a broker's cluster name (default "DefaultCluster"), which
// RouteOf copies into the route. A name server ignores it.
func WithCluster(name string) Option {
	return func(o *options) error {
		if name == "" {
			return errors.New("remotingtest: WithCluster(\"\")")
		}
		o.cluster = name
		return nil
	}
}
