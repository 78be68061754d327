// Package clock is where mqfault reads time and sets timers: the Clock
// interface, the real clock (Real), a manual clock that moves only when told
// to (Manual, for tests and the simulator), and a context whose deadline
// passes on a Clock (Context, WithTimeout).
//
// It is a leaf: it imports nothing of mqfault, so a plugin, a detector or a
// test harness uses it without linking the strategy.
package clock
