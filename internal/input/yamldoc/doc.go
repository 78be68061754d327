// Package yamldoc decodes one YAML (or JSON) document node by node, strictly,
// and collects every problem it finds, each with the path of the field
// ("events[2].state"), its line and its column, instead of stopping at the
// first. pkg/config and pkg/sim decode their files with it, so both report
// all the problems of a file in one run, the same way.
//
// Start with Parse, which returns the document's root node (or a syntax
// problem with its line), then walk the root with a Decoder: Mapping or
// Fields for mappings, List for sequences, and the scalar readers (String,
// Duration, Int, Uint, Float). A Decoder is not safe for concurrent use.
package yamldoc
