package rocketmqgo

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe/setup"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// build runs the options through newProducer, as NewProducer does before
// it builds the client's producer, and releases what that built.
func build(opts ...Option) (*Producer, error) {
	o := defaultOptions()
	o.log = quietLog
	for _, opt := range opts {
		opt(&o)
	}
	p, err := newProducer(nil, o)
	if err != nil {
		return nil, err
	}
	_ = p.strat.Close()
	p.unregister()
	return p, nil
}

// TestOptionConflicts: WithConfig sets what WithStrategyConfig and
// WithSendConfig set, so giving it with either (in any order) is refused
// with ErrConflictingOptions naming both options, every conflict at once and
// beside the config's own problems; either of the two without WithConfig is
// fine.
func TestOptionConflicts(t *testing.T) {
	cfg := config.DefaultConfig()
	badCfg := cfg
	badCfg.Strategy.DetectTimeout = -time.Second
	tests := []struct {
		name string
		opts []Option
		want []string // each a line of the error, in order; nil: no error
	}{
		{"config and strategy", []Option{WithConfig(cfg), WithStrategyConfig(latency.DefaultConfig())},
			[]string{"WithConfig and WithStrategyConfig"}},
		{"strategy, then config", []Option{WithStrategyConfig(latency.DefaultConfig()), WithConfig(cfg)},
			[]string{"WithConfig and WithStrategyConfig"}},
		{"config and send", []Option{WithConfig(cfg), WithSendConfig(mqproducer.DefaultConfig())},
			[]string{"WithConfig and WithSendConfig"}},
		{"all three", []Option{WithSendConfig(mqproducer.DefaultConfig()), WithConfig(cfg), WithStrategyConfig(latency.DefaultConfig())},
			[]string{"WithConfig and WithStrategyConfig", "WithConfig and WithSendConfig"}},
		{"a bad config and send", []Option{WithConfig(badCfg), WithSendConfig(mqproducer.DefaultConfig())},
			[]string{"WithConfig and WithSendConfig", "detect_timeout"}},
		{"strategy and send", []Option{WithStrategyConfig(latency.DefaultConfig()), WithSendConfig(mqproducer.DefaultConfig())}, nil},
		{"config twice", []Option{WithConfig(config.Reference5()), WithConfig(cfg)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := build(tt.opts...)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("newProducer() error = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("newProducer() = nil error, want %q", tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("newProducer() error =\n%v\nwant %d lines saying %q", err, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("error line %d = %q, want it to say %q", i+1, lines[i], w)
				}
			}
			if !errors.Is(err, ErrConflictingOptions) {
				t.Errorf("newProducer() error = %v, want errors.Is ErrConflictingOptions", err)
			}
		})
	}
}

// TestWithConfigInvalid: a config with bad knobs is refused by NewProducer
// with the config's own error (the *config.Error naming each knob, all at
// once), not a message of the wrapper's.
func TestWithConfigInvalid(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Strategy.DetectTimeout = -time.Second
	cfg.Producer.Timeout = 0
	cfg.LogInterval = -time.Second
	_, err := NewProducer(nil, WithConfig(cfg), WithLogger(quietLog))
	want := cfg.Validate()
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("NewProducer(WithConfig(bad)) error =\n%v\nwant the config's:\n%v", err, want)
	}
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Knob != "detect_timeout" || !errors.Is(err, config.ErrInvalid) {
		t.Errorf("error = %v, want a *config.Error for detect_timeout matching config.ErrInvalid", err)
	}
	if errors.Is(err, ErrConflictingOptions) {
		t.Errorf("error = %v matches ErrConflictingOptions with no conflict", err)
	}
}

// TestWithConfigApplies: WithConfig's strategy, send loop and observer
// knobs are what the producer runs with.
func TestWithConfigApplies(t *testing.T) {
	cfg := config.Reference5()
	cfg.Strategy.FaultTolerance = true
	cfg.Producer.RetryTimes = 5
	cfg.CountStages = false
	p, err := build(WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if p.cfg.RetryTimes != 5 || p.cfg.MaxTimeoutPerRequest != 0 {
		t.Errorf("send config = %+v, want Reference5's with 5 retries", p.cfg)
	}
	s := p.Strategy()
	if s.Mode() != latency.ModeV5 || !s.FaultToleranceEnabled() || s.DetectorEnabled() || s.StageCounter() != nil {
		t.Errorf("strategy: mode %v, fault tolerance %t, detector %t, stage counter %v; want v5, on, off, none",
			s.Mode(), s.FaultToleranceEnabled(), s.DetectorEnabled(), s.StageCounter())
	}
	// Without WithConfig the defaults are config.DefaultConfig's, picks counted.
	p, err = build()
	if err != nil {
		t.Fatal(err)
	}
	if p.Strategy().StageCounter() == nil || p.cfg.RetryTimes != config.DefaultConfig().Producer.RetryTimes {
		t.Errorf("defaults: stage counter %v, retries %d; want a counter and config.DefaultConfig's", p.Strategy().StageCounter(), p.cfg.RetryTimes)
	}
}

// TestWithMetrics: the metrics are registered by NewProducer and
// unregistered by Shutdown, or when NewProducer fails after registering
// them; a second producer on the same Registerer under the same name is
// refused, the error naming WithMetrics and the producer.
func TestWithMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	// The client refuses a name server list with no address: after the
	// metrics were registered.
	_, err := NewProducer([]producer.Option{producer.WithNsResolver(primitive.NewPassthroughResolver(nil))},
		WithMetrics(reg, "orders"), WithLogger(quietLog))
	if err == nil {
		t.Fatal("NewProducer() with no name server = nil error, want the client's")
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("%d metric families left after NewProducer failed, want 0", len(mfs))
	}
	ns := []producer.Option{producer.WithNsResolver(primitive.NewPassthroughResolver([]string{"127.0.0.1:1"}))}
	p, err := NewProducer(ns, WithMetrics(reg, "orders"), WithLogger(quietLog))
	if err != nil {
		t.Fatalf("NewProducer() error = %v", err)
	}
	if mfs, _ := reg.Gather(); len(mfs) == 0 {
		t.Error("no metrics registered by NewProducer")
	}
	_, err = NewProducer(ns, WithMetrics(reg, "orders"), WithLogger(quietLog))
	if !errors.Is(err, setup.ErrDuplicateMetrics) || !strings.Contains(err.Error(), "WithMetrics") || !strings.Contains(err.Error(), `producer "orders"`) {
		t.Errorf("a second producer named orders: error = %v, want ErrDuplicateMetrics naming WithMetrics and the producer", err)
	}
	other, err := NewProducer(ns, WithMetrics(reg, "audit"), WithLogger(quietLog))
	if err != nil {
		t.Fatalf("NewProducer(audit) beside orders: error = %v", err)
	}
	for _, q := range []*Producer{p, other} {
		if err := q.Shutdown(); err != nil {
			t.Fatalf("Shutdown() error = %v", err)
		}
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("%d metric families left after Shutdown, want 0", len(mfs))
	}
}
