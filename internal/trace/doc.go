// Package trace runs routing traces: small programs that drive the strategy,
// its fault table and (with send) the producer's retry loop step by step on a
// virtual clock and print every decision. The language is specified in
// docs/TRACE.md; the reference's own outputs for the traces under
// testdata/conformance are the contract mqfault is tested against.
//
// Start with Run.
package trace
