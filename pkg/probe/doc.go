// Package probe is the contract between mqfault's detector and whatever asks
// a broker whether it is there: ServiceDetector (a probe of one endpoint,
// with its deadline in ctx and ErrInconclusive for "no information"),
// Resolver (where a broker is), the built-in TCPDetector, and Within, which
// asks a ServiceDetector as a detector round does. Package probetest is the
// conformance suite every ServiceDetector passes.
//
// It is a leaf beside package clock: a plugin or a detector links it
// without linking the strategy.
package probe
