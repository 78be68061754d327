//go:build race

package sim

// raceEnabled is true when the tests run under the race detector, which
// makes simulation about ten times slower: long runs are skipped then.
const raceEnabled = true
