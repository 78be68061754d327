package route_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/mqfault/mqfault/pkg/route"
)

// BenchmarkNewPublishInfo converts normal routes of n brokers with one write
// queue each, the queue data and broker data in the same order (not the
// sorted order the conversion walks); ns/broker shows how the conversion
// scales with the broker entries. Routes over route.MaxBrokerEntries are
// refused (the refusal is what their sub-benchmark measures).
func BenchmarkNewPublishInfo(b *testing.B) {
	for _, n := range []int{5_000, 20_000, route.MaxBrokerEntries, 80_000} {
		data := manyBrokers(n, 1)
		b.Run("brokers="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, err := route.NewPublishInfo("T", data)
				if refused := errors.Is(err, route.ErrInvalidRoute); refused != (n > route.MaxBrokerEntries) || (err != nil && !refused) {
					b.Fatalf("NewPublishInfo(%d brokers) error = %v", n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/broker")
		})
	}
}
