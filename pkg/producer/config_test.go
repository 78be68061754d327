package producer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// TestConfigValidateEveryProblem checks that Validate reports every setting
// out of range at once, one *ConfigError per problem in field order, each
// matching ErrInvalidConfig, and that the type is latency's too.
func TestConfigValidateEveryProblem(t *testing.T) {
	for _, c := range []producer.Config{producer.Reference5(), producer.Reference4(), producer.DefaultConfig()} {
		if err := c.Validate(); err != nil {
			t.Errorf("preset Validate() = %v, want nil", err)
		}
	}
	c := producer.DefaultConfig()
	c.RetryTimes = -1
	c.Timeout = -3 * time.Second
	c.AsyncMaxBytes = -1
	c.RouteRefreshInterval = 0
	err := c.Validate()
	want := []string{
		"producer: RetryTimes = -1: must not be negative",
		"producer: Timeout = -3s: must be positive",
		"producer: AsyncMaxBytes = -1: must not be negative (0 means no bound)",
		"producer: RouteRefreshInterval = 0s: must be positive",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("Validate() =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(want) {
		t.Fatalf("Validate() does not unwrap to %d errors", len(want))
	}
	for _, e := range joined.Unwrap() {
		var ce *latency.ConfigError // the one type
		if !errors.As(e, &ce) || !errors.Is(e, producer.ErrInvalidConfig) || errors.Is(e, latency.ErrInvalidConfig) {
			t.Errorf("%v: want a *ConfigError matching producer.ErrInvalidConfig only", e)
		}
	}
}
