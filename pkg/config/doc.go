// Package config is mqfault's one configuration: every knob of the strategy
// (pkg/latency), the send loop (pkg/producer) and the observers, in one
// Config value, with its presets and its loaders.
//
// Start with DefaultConfig (recommended), Reference5 or Reference4 (RocketMQ
// 5.3.3's or 4.9.8's defaults exactly), or with Load, which reads a YAML or
// JSON file and then the MQFAULT_ environment variables over it:
//
//	cfg, err := config.Load("mqfault.yaml") // "" reads no file (or the one MQFAULT_CONFIG names)
//	if err != nil {
//		return err // names the knob, the value and where it came from
//	}
//
// Every knob has a name, which is its key in a file, and one environment
// variable, MQFAULT_ followed by the name in upper case (Knobs lists them).
// Values are written the same way in both places: durations as Go durations
// ("200ms", "3s"), switches as true/false (also on/off, yes/no, 1/0), lists
// comma-separated (a file may also use a YAML or JSON list). An invalid value
// is an *Error naming the knob, the value, where it was written (the file and
// line, or the variable) and why; Load, Decode, ApplyEnv and Validate report
// every problem at once, one *Error per problem joined with errors.Join (one
// per line), in the knobs' names, never the Go fields'.
//
// The knobs live in one table (knobs.go): adding a field to latency.Config or
// producer.Config and one line to that table gives it a file key, an
// environment variable, a place in Encode's output, and error messages that
// name it.
package config
