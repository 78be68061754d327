package latency_test

import (
	"strconv"
	"time"
)

func itoa[T ~int | ~int32 | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

var t0 = time.UnixMilli(1000000)

// ms is a number of milliseconds after t0, for readable expectations.
func ms(t time.Time) int64 { return t.Sub(t0).Milliseconds() }
