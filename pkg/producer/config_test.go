package producer_test

import (
	"errors"
	"math"
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
	c.RoomWait = 1.5
	err := c.Validate()
	want := []string{
		"producer: RetryTimes = -1: must not be negative",
		"producer: Timeout = -3s: must be positive",
		"producer: AsyncMaxBytes = -1: must not be negative (0 means no bound)",
		"producer: RoomWait = 1.5: must be in [0, 1] waits per sync send (0 turns waiting for room off)",
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

// TestConfigRetriesBounded checks that retry counts whose attempt count
// (1 + retries) would overflow are refused by Validate, NewPolicy and New
// with a *ConfigError naming the field, and that the largest accepted count
// gives a positive number of attempts.
func TestConfigRetriesBounded(t *testing.T) {
	for _, tt := range []struct {
		field string
		set   func(c *producer.Config, n int)
		kind  producer.Kind
	}{
		{"RetryTimes", func(c *producer.Config, n int) { c.RetryTimes = n }, producer.KindSync},
		{"AsyncRetryTimes", func(c *producer.Config, n int) { c.AsyncRetryTimes = n }, producer.KindAsync},
	} {
		for _, n := range []int{math.MaxInt, math.MaxInt32, producer.MaxRetries + 1} {
			cfg := producer.Reference5()
			tt.set(&cfg, n)
			err := cfg.Validate()
			var ce *producer.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field || !errors.Is(err, producer.ErrInvalidConfig) {
				t.Errorf("%s = %d: Validate() = %v, want a ConfigError for %s", tt.field, n, err, tt.field)
				continue
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("%s = %d: error %q does not name the field", tt.field, n, err)
			}
			if _, err := producer.NewPolicy(cfg, latency.ModeV5); !errors.As(err, &ce) || ce.Field != tt.field {
				t.Errorf("%s = %d: NewPolicy() error = %v, want the ConfigError", tt.field, n, err)
			}
		}
		cfg := producer.Reference5()
		tt.set(&cfg, producer.MaxRetries)
		pol, err := producer.NewPolicy(cfg, latency.ModeV5)
		if err != nil {
			t.Fatalf("%s = MaxRetries: NewPolicy() error = %v", tt.field, err)
		}
		if got := pol.MaxAttempts(tt.kind); got != producer.MaxRetries+1 || int64(got) > math.MaxInt32 {
			t.Errorf("%s = MaxRetries: MaxAttempts = %d, want %d (within int32)", tt.field, got, producer.MaxRetries+1)
		}
	}
}

// TestSendWithHugeRetryTimes checks that a producer with the largest
// accepted RetryTimes still sends: its first attempt is made and answered.
func TestSendWithHugeRetryTimes(t *testing.T) {
	cfg := producer.Reference5()
	cfg.RetryTimes, cfg.AsyncRetryTimes = producer.MaxRetries, producer.MaxRetries
	h := newHarness(t, harnessOpts{cfg: &cfg})
	h.expect(call{broker: "B", lat: ms(1)})
	if _, err := h.p.SendSync(t.Context(), msg()); err != nil {
		t.Errorf("SendSync() error = %v, want the first attempt's answer", err)
	}
}
