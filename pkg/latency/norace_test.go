//go:build !race

package latency_test

// raceEnabled is true when the race detector is on: long randomized tests
// then run fewer seeds.
const raceEnabled = false
