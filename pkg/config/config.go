package config

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// Config is every knob of an mqfault producer: the strategy's, the send
// loop's and the observers'. The zero value is not valid; start from a preset.
// A Config is a plain value: copy it freely (Strategy.Filters and
// Strategy.Durations are shared by copies, and both are immutable in use).
type Config struct {
	// Strategy holds the knobs of the selection cascade, the fault table and
	// the detector: mode, fault_tolerance, detector, detect_interval,
	// detect_timeout, detect_period, detect_parallel, durations, and the
	// policies past the reference: max_isolated_fraction, isolation_backoff,
	// max_isolation, backoff_decay, probe_failures, recovered_after,
	// capacity_decrease, capacity_recovery (latency's policy registry).
	// Strategy.Filters is set in code only: it has no knob.
	Strategy latency.Config
	// Producer holds the knobs of the send loop: retry_times,
	// async_retry_times, retry_codes, timeout, max_timeout_per_request,
	// retry_another_broker, async_max_in_flight, async_max_bytes,
	// async_fail_fast, route_refresh_interval.
	Producer producer.Config
	// LogInterval is the log_interval knob: the least time between two log
	// records of one kind about one broker (or topic), so a broker that stays
	// down does not flood the log; the records in between are counted and
	// reported with the next one. 0 logs every event.
	LogInterval time.Duration
	// CountStages is the count_stages knob: count every pick by the cascade
	// stage that answered it (one atomic add per pick), for the picks-by-stage
	// metric and the fault-table handler.
	CountStages bool
}

// Presets name the presets Preset knows, in the order they are documented.
func Presets() []string { return []string{"default", "reference5", "reference4"} }

// DefaultConfig returns the recommended settings, the mqfault preset:
// latency.DefaultConfig (5.3.3 semantics, fault tolerance and the detector
// on, 16 probes at a time, and the policies past the reference: at most half
// of a route's brokers isolated at once, repeat offenders isolated twice as
// long each time up to a minute, failed probes counted) and
// producer.DefaultConfig (the 5.3.3 per-attempt cap on at 1 s), logging each
// kind of event about a broker at most every 10 s, picks counted by stage.
func DefaultConfig() Config {
	return Config{
		Strategy:    latency.DefaultConfig(),
		Producer:    producer.DefaultConfig(),
		LogInterval: 10 * time.Second,
		CountStages: true,
	}
}

// Reference5 returns RocketMQ 5.3.3's defaults exactly (latency.Reference5,
// producer.Reference5: fault tolerance and the detector off, no per-attempt
// cap). The observer knobs, which the reference does not have, are
// DefaultConfig's: they change no decision.
func Reference5() Config {
	c := DefaultConfig()
	c.Strategy = latency.Reference5()
	c.Producer = producer.Reference5()
	return c
}

// Reference4 returns RocketMQ 4.9.8's defaults exactly (latency.Reference4,
// producer.Reference4: mode v4, fault tolerance off, the 4.x duration table
// and retry codes through the mode). The observer knobs are DefaultConfig's.
func Reference4() Config {
	c := DefaultConfig()
	c.Strategy = latency.Reference4()
	c.Producer = producer.Reference4()
	return c
}

// Preset returns the preset called name: "default", "reference5" or
// "reference4" (case does not matter). Another name is an *Error for the
// preset knob.
func Preset(name string) (Config, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "default":
		return DefaultConfig(), nil
	case "reference5":
		return Reference5(), nil
	case "reference4":
		return Reference4(), nil
	}
	return Config{}, &Error{Knob: presetKey, Value: name, Reason: "must be one of " + strings.Join(Presets(), ", ")}
}

// Validate checks every knob and returns nil, or the problems: one *Error
// naming the knob, or when there are several, one *Error per problem joined
// with errors.Join (errors.As finds the first; the message has one problem
// per line). Each *Error also wraps what latency.Config.Validate or
// producer.Config.Validate said, so errors.Is(err, latency.ErrInvalidConfig)
// (or producer.ErrInvalidConfig) holds as well as errors.Is(err, ErrInvalid).
func (c Config) Validate() error {
	errs := c.validate()
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return join(out)
}

// validate returns one *Error per problem, in the order of the knob table.
func (c Config) validate() []*Error {
	var errs []*Error
	errs = append(errs, c.knobErrors("Strategy.", c.Strategy.Validate())...)
	errs = append(errs, c.knobErrors("Producer.", c.Producer.Validate())...)
	if c.LogInterval < 0 {
		errs = append(errs, &Error{Knob: "log_interval", Value: c.LogInterval.String(), Reason: "must not be negative (0 logs every event)"})
	}
	slices.SortStableFunc(errs, func(a, b *Error) int { return cmp.Compare(knobOrder(a.Knob), knobOrder(b.Knob)) })
	return errs
}

// knobErrors turns what a sub-config's Validate returned (one
// *latency.ConfigError per problem, joined) into an *Error per problem
// naming the knob bound to the field it reports; prefix is where the
// sub-config sits in Config ("Strategy.").
func (c Config) knobErrors(prefix string, err error) []*Error {
	if err == nil {
		return nil
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	var errs []*Error
	for _, part := range parts {
		var ce *latency.ConfigError // the one type of latency's and producer's
		if !errors.As(part, &ce) {
			errs = append(errs, &Error{Reason: part.Error(), Err: part})
			continue
		}
		reason, related := ce.Reason, ""
		if ce.Related != "" {
			if rk, ok := knobByField[prefix+ce.Related]; ok {
				related = rk.name
				reason = strings.ReplaceAll(reason, ce.Related, rk.name)
			}
		}
		k, ok := knobByField[prefix+ce.Field]
		if !ok { // a field without a knob (Filters, set in code)
			errs = append(errs, &Error{Knob: ce.Field, Reason: reason, Err: part, related: related})
			continue
		}
		errs = append(errs, &Error{Knob: k.name, Value: k.bind(&c).get(), Reason: reason, Err: part, related: related})
	}
	return errs
}
