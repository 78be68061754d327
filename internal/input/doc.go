// Package input is the parent of the leaf utilities mqfault's packages use
// to read and check what a user gives them: configerr (the one
// configuration error type, naming the setting that is wrong), yamldoc
// (strict YAML decoding that reports every problem with its path and line)
// and suggest (the "did you mean" of a misspelt flag, knob or field).
//
// They are leaves: they import the standard library, a YAML parser and each
// other, never another mqfault package, so pkg/latency, pkg/producer,
// pkg/config, pkg/sim and plugins/host may all import them. The drivers
// above the producer live beside this directory, not in it (internal/trace,
// the trace runner; internal/doccheck, the documentation's tests), and no
// package under pkg/ imports them. wire/deps_test.go checks both rules.
package input
