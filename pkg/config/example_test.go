package config_test

import (
	"errors"
	"fmt"

	"github.com/mqfault/mqfault/pkg/config"
)

// LoadEnv starts from a preset, applies a file (none here) and then the
// MQFAULT_ variables.
func ExampleLoadEnv() {
	cfg, err := config.LoadEnv("", []string{
		"MQFAULT_PRESET=reference5",
		"MQFAULT_FAULT_TOLERANCE=on",
		"MQFAULT_DETECT_TIMEOUT=300ms",
		"MQFAULT_RETRY_CODES=17,14",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Strategy.FaultTolerance, cfg.Strategy.DetectTimeout, cfg.Producer.RetryCodes, cfg.Producer.MaxTimeoutPerRequest)
	// Output: true 300ms [17 14] 0s
}

// An invalid value names the knob, the value and where it was written.
func ExampleLoadEnv_error() {
	_, err := config.LoadEnv("", []string{"MQFAULT_DETECT_INTERVAL=2000"})
	var ce *config.Error
	fmt.Println(errors.As(err, &ce), ce.Knob)
	fmt.Println(err)
	// Output:
	// true detect_interval
	// config: detect_interval = "2000" (MQFAULT_DETECT_INTERVAL): a duration needs a unit, such as 200ms or 3s
}

// Every problem is reported at once, one per line, in the knobs' names.
func ExampleLoadEnv_problems() {
	_, err := config.LoadEnv("", []string{
		"MQFAULT_TIMEOUT=-3s",
		"MQFAULT_RETRY_TIMES=-1",
		"MQFAULT_MAX_ISOLATED_FRACTION=50%",
	})
	fmt.Println(err)
	// Output:
	// config: max_isolated_fraction = "50%" (MQFAULT_MAX_ISOLATED_FRACTION): must be a number such as 0.5, not a percentage (write 50% as 0.5)
	// config: retry_times = "-1" (MQFAULT_RETRY_TIMES): must not be negative
	// config: timeout = "-3s" (MQFAULT_TIMEOUT): must be positive
}

// Decode reads YAML or JSON; the file's keys are the knobs' names.
func ExampleConfig_Decode() {
	cfg := config.Reference4()
	err := cfg.Decode([]byte(`{"fault_tolerance": true, "durations": {"latency_max": ["550ms", "3s"], "not_available": ["30s", "180s"]}}`), "mqfault.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := cfg.Get("durations")
	fmt.Println(cfg.Strategy.Mode, cfg.Strategy.FaultTolerance, d)
	// Output: v4 true 550ms,3s;30s,3m0s
}
