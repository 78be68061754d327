package host_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/pkg/route/zonefilter"
	"github.com/mqfault/mqfault/plugins/host"
	pluginv1 "github.com/mqfault/mqfault/plugins/proto/mqfault/plugin/v1"
	"github.com/mqfault/mqfault/plugins/protocol"
	"github.com/mqfault/mqfault/plugins/sdk"
)

// The test binary is its own plugin: started with helperEnv set, TestMain
// serves the plugin the variable names instead of running the tests.
const helperEnv = "MQFAULT_HOST_TEST_PLUGIN"

// benchZonesEnv, when set, replaces the zone map of the "zone" plugin.
const benchZonesEnv = "MQFAULT_HOST_TEST_ZONES"

// zonesText is the zone map of the "zone" helper plugin (preferring az1).
const zonesText = `broker-a az1
broker-b az1
broker-c az2
broker-d az2
broker-e az3
`

// hostEnv, when set (and helperEnv is not), makes the test binary a plugin
// host instead: it runs the "tcp" helper plugin pinned to hostSumEnv, its
// private copy under the directory hostEnv names, prints "plugin PID" and
// waits to be killed.
const (
	hostEnv    = "MQFAULT_HOST_TEST_HOST"
	hostSumEnv = "MQFAULT_HOST_TEST_HOST_SHA256"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		servePlugin(name)
		os.Exit(0)
	}
	if dir := os.Getenv(hostEnv); dir != "" {
		runHost(dir)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runHost is the test binary as a plugin host (hostEnv).
func runHost(copyDir string) {
	cfg := helper("tcp")
	cfg.SHA256 = os.Getenv(hostSumEnv)
	cfg.CopyDir = copyDir
	started := make(chan int, 1)
	cfg.OnEvent = func(e host.Event) {
		if e.Kind == host.EventStarted {
			select {
			case started <- e.PID:
			default:
			}
		}
	}
	if _, err := host.NewDetector(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("plugin %d\n", <-started)
	time.Sleep(time.Hour) // until killed
}

// helper returns the config that starts the test binary as plugin name.
// Under the race detector a process sleeps a second before it exits; the
// plugins are told not to.
func helper(name string) host.Config {
	return host.Config{Path: os.Args[0], Env: []string{helperEnv + "=" + name, "GORACE=atexit_sleep_ms=0"}}
}

func servePlugin(name string) {
	block := make(chan struct{}) // never closed: the hanging plugins wait on it
	switch name {
	case "tcp":
		sdk.ServeDetector(probe.TCPDetector{})
	case "zone":
		text := zonesText
		if t := os.Getenv(benchZonesEnv); t != "" {
			text = t
		}
		zones, err := zonefilter.ParseZones(strings.NewReader(text))
		if err != nil {
			panic(err)
		}
		f, _ := zonefilter.New("az1", zones)
		sdk.ServeFilter(f)
	case "hang-detector":
		// Raw, so that the whole call hangs (the SDK would answer at the
		// deadline for a detector that overstays it).
		serveRaw(protocol.KindDetector, func(s *grpc.Server) { pluginv1.RegisterDetectorServer(s, hangingDetector{block: block}) })
	case "hang-filter":
		sdk.ServeFilter(sdk.BatchFilterFunc(func(context.Context, string, []route.MessageQueue) ([]bool, error) {
			<-block
			return nil, nil
		}))
	case "logger":
		log := sdk.Logger(slog.LevelDebug)
		sdk.ServeDetector(probe.ServiceDetectorFunc(func(_ context.Context, ep string) error {
			log.Warn("probing", "endpoint", ep, "n", 7)
			fmt.Fprintln(os.Stderr, "plain stderr line for "+ep)
			fmt.Fprintln(os.Stdout, "plain stdout line for "+ep)
			return nil
		}))
	case "flood":
		// floodLines lines for each probe: a third logged, a third written
		// to stderr, a third to stdout (the last two through go-plugin's
		// stdio stream).
		log := sdk.Logger(slog.LevelDebug)
		sdk.ServeDetector(probe.ServiceDetectorFunc(func(context.Context, string) error {
			for i := range floodLines / 3 {
				log.Warn("flood line", "i", i)
				fmt.Fprintln(os.Stderr, "flood line", i)
				fmt.Fprintln(os.Stdout, "flood line", i)
			}
			return nil
		}))
	case "v2":
		hs := protocol.Handshake(protocol.KindDetector)
		hs.ProtocolVersion = 2
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: map[int]plugin.PluginSet{2: {"detector": &protocol.DetectorPlugin{Impl: probe.TCPDetector{}}}},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	case "garbage-detector":
		serveRaw(protocol.KindDetector, func(s *grpc.Server) { pluginv1.RegisterDetectorServer(s, garbageDetector{}) })
	case "garbage-filter":
		serveRaw(protocol.KindFilter, func(s *grpc.Server) { pluginv1.RegisterFilterServer(s, garbageFilter{}) })
	case "flood-handshake":
		// More than go-plugin reads for one handshake line, no line break.
		fmt.Print(strings.Repeat("garbage ", 100<<10/8))
		time.Sleep(time.Minute) // the host gives up first and kills it
	case "deadline-detector":
		// A broker that never answers: the plugin's own verdict at its
		// deadline is "unreachable: deadline exceeded".
		sdk.ServeDetector(probe.ServiceDetectorFunc(func(ctx context.Context, ep string) error {
			<-ctx.Done()
			return &probe.Error{Endpoint: ep, Err: ctx.Err()}
		}))
	case "garbage-handshake":
		fmt.Println("this is not a handshake")
		time.Sleep(time.Minute) // the host gives up first and kills it
	case "exit-at-start":
		fmt.Fprintln(os.Stderr, "boom: cannot read my configuration")
		os.Exit(3)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper plugin", name)
		os.Exit(2)
	}
}

// floodLines is how many lines the "flood" plugin writes for each probe.
const floodLines = 3000

// rawPlugin serves whatever register puts on the gRPC server.
type rawPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	register func(*grpc.Server)
}

func (p *rawPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	p.register(s)
	return nil
}

func (p *rawPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

func serveRaw(kind protocol.Kind, register func(*grpc.Server)) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  protocol.Handshake(kind),
		VersionedPlugins: map[int]plugin.PluginSet{protocol.ProtocolVersion: {string(kind): &rawPlugin{register: register}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}

// garbageDetector answers outside the protocol, one way per endpoint.
type garbageDetector struct {
	pluginv1.UnimplementedDetectorServer
}

func (garbageDetector) Detect(_ context.Context, req *pluginv1.DetectRequest) (*pluginv1.DetectResponse, error) {
	switch req.GetEndpoint() {
	case "verdict-42":
		return &pluginv1.DetectResponse{Verdict: 42}, nil
	case "code-99":
		return &pluginv1.DetectResponse{Verdict: pluginv1.Verdict_VERDICT_UNREACHABLE, Code: 99}, nil
	case "empty":
		return &pluginv1.DetectResponse{}, nil
	case "grpc-error":
		return nil, status.Error(codes.Internal, "something broke")
	}
	return &pluginv1.DetectResponse{Verdict: pluginv1.Verdict_VERDICT_REACHABLE, Code: pluginv1.Code_CODE_NOT_SERVING}, nil
}

// hangingDetector never answers.
type hangingDetector struct {
	pluginv1.UnimplementedDetectorServer
	block chan struct{}
}

func (h hangingDetector) Detect(context.Context, *pluginv1.DetectRequest) (*pluginv1.DetectResponse, error) {
	<-h.block
	return nil, nil
}

// garbageFilter always answers one verdict too few.
type garbageFilter struct {
	pluginv1.UnimplementedFilterServer
}

func (garbageFilter) Decide(_ context.Context, req *pluginv1.DecideRequest) (*pluginv1.DecideResponse, error) {
	n := len(req.GetQueues())
	return &pluginv1.DecideResponse{Admit: make([]bool, max(n-1, 0))}, nil
}
