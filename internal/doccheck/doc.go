// Package doccheck holds tests that hold the repository's documentation to what the
// code does: the go.mod lines README.md tells a user to write must build a module
// outside the repository, the ablations the docs name must exist, every plain fenced
// block must be what the command it names prints, every Go snippet must be a run
// of a Go file that compiles (most often an example_test.go of the package it uses),
// and every benchmark the docs name must be one `go test -bench` runs.
// It has no code of its own.
package doccheck
