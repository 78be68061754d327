//go:build race

package producer_test

// raceEnabled is true when the race detector is on: sync.Pool then drops a
// share of what is put back, so allocation counts mean nothing.
const raceEnabled = true
