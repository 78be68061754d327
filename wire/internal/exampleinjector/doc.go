// Package exampleinjector holds the custom injector that package wire's doc
// comment shows, so that the example is code Wire generates: wire/ci.sh fails
// when its wire_gen.go is stale or Wire cannot generate it, and
// internal/doccheck's TestWireDocInjector fails when the doc comment's code is
// not this package's wire.go.
package exampleinjector
