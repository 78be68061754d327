package host_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/pkg/route/zonefilter"
	"github.com/mqfault/mqfault/plugins/host"
)

// benchRoute is the design's benchmark route: 16 brokers x 4 queues; brokers
// 0-7 are in zone az1, 8-15 in az2.
func benchRoute(b *testing.B) (*route.PublishInfo, zonefilter.Zones) {
	b.Helper()
	var queues []route.MessageQueue
	zones := zonefilter.Zones{}
	for i := range 16 {
		broker := fmt.Sprintf("broker-%02d", i)
		zones[broker] = "az1"
		if i >= 8 {
			zones[broker] = "az2"
		}
		for id := range 4 {
			queues = append(queues, route.MessageQueue{Topic: "bench", BrokerName: broker, QueueID: id})
		}
	}
	info, err := route.NewPublishInfoFromQueues("bench", queues, route.WithRandom(fixedRandom{}))
	if err != nil {
		b.Fatal(err)
	}
	return info, zones
}

// quiet drops the host's log lines, which would interleave with the
// benchmark's output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fixedRandom struct{}

func (fixedRandom) Int32() int32 { return 12345 }

func (fixedRandom) Int32n(n int32) int32 { return 12345 % n }

// benchStrategy is a v5 strategy with fault tolerance on and 4 of the 16
// brokers isolated (2 in each zone), filtering with filters.
func benchStrategy(b *testing.B, filters ...route.QueueFilter) *latency.Strategy {
	b.Helper()
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	cfg.Filters = filters
	s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(time.Unix(0, 0))))
	if err != nil {
		b.Fatal(err)
	}
	for _, i := range []int{1, 5, 9, 13} {
		s.Update(fmt.Sprintf("broker-%02d", i), 0, true, false)
	}
	return s
}

func benchSelect(b *testing.B, s *latency.Strategy, info *route.PublishInfo) {
	b.Helper()
	if _, ok := s.Select(info, latency.PickInfo{}); !ok {
		b.Fatal("Select() found no queue")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Select(info, latency.PickInfo{})
	}
}

// BenchmarkSelectNoFilter is the baseline: the same strategy with no user
// filter.
func BenchmarkSelectNoFilter(b *testing.B) {
	info, _ := benchRoute(b)
	benchSelect(b, benchStrategy(b), info)
}

// BenchmarkSelectWithFilter picks with the zone filter compiled in.
func BenchmarkSelectWithFilter(b *testing.B) {
	info, zones := benchRoute(b)
	f, err := zonefilter.New("az1", zones)
	if err != nil {
		b.Fatal(err)
	}
	f.Update(info)
	benchSelect(b, benchStrategy(b, f), info)
}

// BenchmarkSelectWithPluginFilter picks with the same zone filter served by
// a plugin process (the verdicts are cached in the host).
func BenchmarkSelectWithPluginFilter(b *testing.B) {
	info, zones := benchRoute(b)
	cfg := helper("zone")
	var text strings.Builder
	for broker, zone := range zones {
		text.WriteString(broker + " " + zone + "\n")
	}
	cfg.Env = append(cfg.Env, benchZonesEnv+"="+text.String())
	cfg.Logger = quiet
	f, err := host.NewFilter(host.FilterConfig{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	f.Update(info)
	if err := f.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	if f.Filter(route.MessageQueue{Topic: "bench", BrokerName: "broker-15"}) {
		b.Fatal("the plugin admits an az2 broker: its zone map is not the benchmark's")
	}
	benchSelect(b, benchStrategy(b, f), info)
}
