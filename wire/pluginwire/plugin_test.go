package pluginwire_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/plugins/host"
	mqwire "github.com/mqfault/mqfault/wire"
	"github.com/mqfault/mqfault/wire/pluginwire"
)

// TestNewStrategy builds a strategy whose detector is the tcp-detector
// plugin, run as a real subprocess:
//
//  1. brokers "up" (a live listener) and "down" (a closed port) are isolated
//     and marked unreachable;
//  2. one detector round through the plugin makes "up" reachable and leaves
//     "down" unreachable;
//  3. the cleanup stops the strategy and the plugin, leaving no goroutine
//     (TestMain's goleak check).
func TestNewStrategy(t *testing.T) {
	bin := tcpDetector
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := closed.Addr().String()
	closed.Close()

	cfg := config.DefaultConfig()
	res := probe.StaticResolver{"up": up.Addr().String(), "down": downAddr}
	strat, cleanup, err := pluginwire.NewStrategy(cfg, res, host.Config{Path: bin})
	if err != nil {
		t.Fatalf("NewStrategy() error = %v", err)
	}
	defer cleanup()
	strat.Update("up", 0, true, false)
	strat.Update("down", 0, true, false)

	rep, err := strat.DetectRound(context.Background())
	if err != nil {
		t.Fatalf("DetectRound() error = %v", err)
	}
	if rep.Probed != 2 || rep.Reachable != 1 || rep.Unreachable != 1 {
		t.Errorf("DetectRound() = %+v, want 2 probed, 1 reachable, 1 unreachable", rep)
	}
	if ft := strat.Table(); !ft.IsReachable("up") || ft.IsReachable("down") {
		t.Errorf("after the round: up reachable = %t, down reachable = %t; want true, false", ft.IsReachable("up"), ft.IsReachable("down"))
	}
}

// TestNewStrategyChecksum shows that a pinned plugin whose binary does
// not match is refused before it runs, with an error that says checksum, and
// that the injector then leaves nothing behind.
func TestNewStrategyChecksum(t *testing.T) {
	bin := tcpDetector
	pin := strings.Repeat("0", 64)
	_, _, err := pluginwire.NewStrategy(config.DefaultConfig(), probe.StaticResolver{}, host.Config{Path: bin, SHA256: pin})
	if !errors.Is(err, host.ErrChecksum) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("NewStrategy() with a wrong pin: error = %v, want ErrChecksum saying checksum", err)
	}
}

// TestNewProducer builds a producer whose detector is the tcp-detector
// plugin, with metrics labelled producer="orders", and sends through it; the
// cleanup unregisters the metrics and stops the plugin, leaving no goroutine
// (TestMain's goleak check).
func TestNewProducer(t *testing.T) {
	var routes producer.StaticRoutes
	routes.SetQueues("T", map[string]int{"a": 2})
	sent := 0
	tr := producer.TransportFunc(func(context.Context, producer.Attempt) (producer.Result, error) {
		sent++
		return producer.Result{MsgID: "id"}, nil
	})
	reg := prometheus.NewRegistry()
	p, cleanup, err := pluginwire.NewProducer(config.DefaultConfig(), tr, &routes, probe.StaticResolver{},
		host.Config{Path: tcpDetector}, mqwire.Observability{Registerer: reg, Name: "orders"})
	if err != nil {
		t.Fatalf("NewProducer() error = %v", err)
	}
	if _, err := p.SendSync(context.Background(), &producer.Message{Topic: "T"}); err != nil || sent != 1 {
		t.Errorf("SendSync() = %v after %d attempts, want nil after 1", err, sent)
	}
	if !p.Strategy().DetectorEnabled() {
		t.Error("the strategy's detector is off, want the plugin running as its detector")
	}
	if mfs, _ := reg.Gather(); len(mfs) == 0 {
		t.Error("no metrics registered")
	}
	cleanup()
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("%d metric families left after the cleanup, want 0", len(mfs))
	}
}
