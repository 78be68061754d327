package clock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
)

// A manual clock moves only when told to, firing timers in deadline order.
func ExampleManual() {
	clk := clock.NewManual(time.UnixMilli(0))
	clk.AfterFunc(2*time.Second, func() { fmt.Println("second timer at", clk.Now().UnixMilli()) })
	clk.AfterFunc(time.Second, func() { fmt.Println("first timer at", clk.Now().UnixMilli()) })
	clk.Advance(5 * time.Second)
	fmt.Println("now", clk.Now().UnixMilli())
	// Output:
	// first timer at 1000
	// second timer at 2000
	// now 5000
}

// WithTimeout is a context whose deadline passes on the given clock.
func ExampleWithTimeout() {
	clk := clock.NewManual(time.UnixMilli(0))
	ctx, cancel := clock.WithTimeout(context.Background(), clk, 200*time.Millisecond)
	defer cancel()
	fmt.Println(ctx.Err())
	clk.Advance(200 * time.Millisecond)
	<-ctx.Done()
	fmt.Println(ctx.Err())
	// Output:
	// <nil>
	// context deadline exceeded
}
