package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/pkg/route/filtertest"
	"github.com/mqfault/mqfault/pkg/route/zonefilter"
	"github.com/mqfault/mqfault/plugins/host"
	"github.com/mqfault/mqfault/plugins/plugintest"
)

var bin string // the plugin, built by TestMain

func TestMain(m *testing.M) {
	plugintest.Main(m, "github.com/mqfault/mqfault/plugins/cmd/zone-filter", &bin)
}

const zonesText = `# two zones and a third
broker-a az1
broker-b az1
broker-c az2
broker-d az2
broker-e az3
`

func writeZones(t testing.TB, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "zones.txt")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mq(broker string, id int) route.MessageQueue {
	return route.MessageQueue{BrokerName: broker, QueueID: id}
}

// cases are routes whose verdicts the compiled-in zone filter gives.
func cases(t testing.TB) []filtertest.Case {
	zones, err := zonefilter.ParseZones(strings.NewReader(zonesText))
	if err != nil {
		t.Fatal(err)
	}
	routes := [][]route.MessageQueue{
		{mq("broker-c", 0), mq("broker-a", 0), mq("broker-d", 1), mq("broker-b", 3)},
		{mq("broker-e", 0), mq("broker-d", 0)},
		{mq("broker-q", 0), mq("broker-b", 1), mq("broker-b", 2)},
		{mq("broker-a", 0)},
	}
	out := make([]filtertest.Case, len(routes))
	for i, r := range routes {
		out[i] = filtertest.Case{Name: fmt.Sprintf("route %d", i), Topic: fmt.Sprintf("Z%d", i), Queues: r, Want: zonefilter.Decide("az1", zones, r)}
	}
	return out
}

func newFilter(t testing.TB, zonesFile string, cfg host.FilterConfig) *host.Filter {
	t.Helper()
	cfg.Path = bin
	cfg.Args = []string{"--zones", zonesFile, "--zone", "az1"}
	f, err := host.NewFilter(cfg)
	if err != nil {
		t.Fatalf("NewFilter() error = %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func updateAndWait(f *host.Filter) func(testing.TB, *route.PublishInfo) {
	return func(tb testing.TB, info *route.PublishInfo) {
		f.Update(info)
		if err := f.Refresh(context.Background()); err != nil {
			tb.Fatalf("Refresh() error = %v", err)
		}
	}
}

// TestConformance runs the filter suite on the plugin and on the zone
// filter compiled in, with the same routes.
func TestConformance(t *testing.T) {
	path := writeZones(t, zonesText)
	cs := cases(t)
	t.Run("plugin", func(t *testing.T) {
		f := newFilter(t, path, host.FilterConfig{})
		filtertest.Run(t, func(testing.TB) filtertest.Subject {
			return filtertest.Subject{Filter: f, Update: updateAndWait(f)}
		}, cs)
	})
	t.Run("compiled in", func(t *testing.T) {
		zones, _ := zonefilter.LoadZones(path)
		filtertest.Run(t, func(tb testing.TB) filtertest.Subject {
			f, err := zonefilter.New("az1", zones)
			if err != nil {
				tb.Fatal(err)
			}
			return filtertest.Subject{Filter: f, Update: func(_ testing.TB, info *route.PublishInfo) { f.Update(info) }}
		}, cs)
	})
}

// TestFollowsFileEdits edits the zone map under a running plugin: the next
// refresh decides with the new map; a broken edit keeps the old one.
func TestFollowsFileEdits(t *testing.T) {
	path := writeZones(t, zonesText)
	f := newFilter(t, path, host.FilterConfig{})
	c := cases(t)[0]
	update := updateAndWait(f)
	update(t, filtertest.PublishInfo(t, c, ""))
	brokerC := route.MessageQueue{Topic: c.Topic, BrokerName: "broker-c"}
	if f.Filter(brokerC) {
		t.Fatalf("Filter(%s) = true, want false (az2)", brokerC)
	}
	// Move broker-c to az1; the size changes, so the plugin sees the edit
	// whatever the file system's time resolution.
	if err := os.WriteFile(path, []byte(strings.Replace(zonesText, "broker-c az2", "broker-c   az1", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !f.Filter(brokerC) {
		t.Errorf("Filter(%s) = false after moving it to az1, want true", brokerC)
	}
	if err := os.WriteFile(path, []byte("broken line with four fields\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Refresh(context.Background()); err != nil {
		t.Errorf("Refresh() with a broken zone file = %v, want nil (the old map is kept)", err)
	}
	if !f.Filter(brokerC) {
		t.Errorf("Filter(%s) = false after a broken edit, want true (old map kept)", brokerC)
	}
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantText string
	}{
		{"missing file", []string{"--zones", filepath.Join(t.TempDir(), "none.txt"), "--zone", "az1"}, "no such file"},
		{"bad file", []string{"--zones", writeZones(t, "one-field\n"), "--zone", "az1"}, "want BROKER ZONE"},
		{"no zone", []string{"--zones", writeZones(t, zonesText)}, "--zone NAME are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := host.NewFilter(host.FilterConfig{Config: host.Config{Path: bin, Args: tt.args, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
			if !errors.Is(err, host.ErrHandshake) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("NewFilter(%v) error = %v, want ErrHandshake with %q", tt.args, err, tt.wantText)
			}
		})
	}
}

func TestFileFilterReload(t *testing.T) {
	path := writeZones(t, "broker-a az1\n")
	f, err := newFileFilter(path, "az1", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	qs := []route.MessageQueue{mq("broker-a", 0), mq("broker-b", 0)}
	got, _ := f.Decide(context.Background(), "T", qs)
	if !got[0] || got[1] {
		t.Errorf("Decide() = %v, want [true false]", got)
	}
	later := time.Now().Add(time.Hour)
	if err := os.WriteFile(path, []byte("broker-b az1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	got, _ = f.Decide(context.Background(), "T", qs)
	if got[0] || !got[1] {
		t.Errorf("Decide() after the edit = %v, want [false true]", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	got, err = f.Decide(context.Background(), "T", qs)
	if err != nil || got[0] || !got[1] {
		t.Errorf("Decide() with the file gone = %v, %v, want the previous map's [false true]", got, err)
	}
}
