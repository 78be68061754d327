package exampleinjector_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/plugins/host"
	"github.com/mqfault/mqfault/plugins/plugintest"
	"github.com/mqfault/mqfault/wire"
	"github.com/mqfault/mqfault/wire/internal/exampleinjector"
)

// tcpDetector is the tcp-detector plugin, built once for the package.
var tcpDetector string

// TestMain builds the plugin and fails the package if any goroutine outlives
// the tests.
func TestMain(m *testing.M) {
	plugintest.Main(m, "github.com/mqfault/mqfault/plugins/cmd/tcp-detector", &tcpDetector)
}

// TestNewMyProducer runs the doc comment's injector: a producer whose
// detector is the tcp-detector plugin sends; a plugin that cannot start is
// the injector's error, with nothing left running.
func TestNewMyProducer(t *testing.T) {
	var routes producer.StaticRoutes
	routes.SetQueues("T", map[string]int{"a": 2})
	tr := producer.TransportFunc(func(context.Context, producer.Attempt) (producer.Result, error) {
		return producer.Result{MsgID: "id"}, nil
	})
	p, cleanup, err := exampleinjector.NewMyProducer(config.DefaultConfig(), tr, &routes, probe.StaticResolver{},
		host.Config{Path: tcpDetector}, wire.Observability{})
	if err != nil {
		t.Fatalf("NewMyProducer() error = %v", err)
	}
	if _, err := p.SendSync(context.Background(), &producer.Message{Topic: "T"}); err != nil {
		t.Errorf("SendSync() = %v, want nil", err)
	}
	if !p.Strategy().DetectorEnabled() {
		t.Error("the strategy's detector is off, want the plugin running as its detector")
	}
	cleanup()

	missing := filepath.Join(t.TempDir(), "no-plugin")
	p, cleanup, err = exampleinjector.NewMyProducer(config.DefaultConfig(), tr, &routes, probe.StaticResolver{},
		host.Config{Path: missing}, wire.Observability{})
	if !errors.Is(err, host.ErrStart) || p != nil || cleanup != nil {
		t.Errorf("NewMyProducer(a missing plugin) = %v, cleanup set %v, error %v; want nil, no cleanup, host.ErrStart", p, cleanup != nil, err)
	}
}
