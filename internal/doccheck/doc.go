// Package doccheck holds tests that hold the repository's documentation to what the
// code does: the go.mod lines README.md tells a user to write must build a module
// outside the repository. It has no code of its own.
package doccheck
