package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/probe/probetest"
	"github.com/mqfault/mqfault/plugins/host"
	"github.com/mqfault/mqfault/plugins/plugintest"
)

var bin string // the plugin, built by TestMain

func TestMain(m *testing.M) {
	plugintest.Main(m, "github.com/mqfault/mqfault/integrations/rocketmqgo/cmd/rocketmq-detector", &bin)
}

var quiet = slog.New(slog.DiscardHandler)

func broker(t *testing.T, f remotingtest.Fault) *remotingtest.Broker {
	t.Helper()
	b, err := remotingtest.NewBroker("broker-a", remotingtest.WithLogger(quiet))
	if err != nil {
		t.Fatalf("NewBroker() error = %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.SetFault(f); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	return b
}

// TestConformance runs probe/probetest on the plugin through the real
// host: a live broker is reachable; a closed port, a port that accepts and
// closes, and a hung broker are unreachable; a mute port and a hung broker
// time out.
func TestConformance(t *testing.T) {
	d, err := host.NewDetector(host.Config{Path: bin, Logger: quiet})
	if err != nil {
		t.Fatalf("NewDetector() error = %v", err)
	}
	defer d.Close()
	hung := broker(t, remotingtest.Fault{Hung: true}).Addr()
	probetest.Run(t, d, probetest.Endpoints{
		Reachable:   []string{broker(t, remotingtest.Fault{}).Addr()},
		Unreachable: []string{probetest.ClosedTCP(t), probetest.ListenTCP(t), hung},
		Silent:      []string{probetest.SilentTCP(t), hung},
		Timeout:     2 * time.Second,
	})
}

// TestTopicFlagsAndEnv: the queue asked about comes from the flags, else
// the environment, else TBW102 queue 0; bad values stop the plugin before
// its handshake with a message naming them.
func TestTopicFlagsAndEnv(t *testing.T) {
	b := broker(t, remotingtest.Fault{})
	probe := func(cfg host.Config) {
		t.Helper()
		cfg.Path, cfg.Logger = bin, quiet
		d, err := host.NewDetector(cfg)
		if err != nil {
			t.Fatalf("NewDetector(%v, %v) error = %v", cfg.Args, cfg.Env, err)
		}
		defer d.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := d.Detect(ctx, b.Addr()); err != nil {
			t.Fatalf("Detect() = %v, want reachable", err)
		}
	}
	probe(host.Config{})
	probe(host.Config{Env: []string{"ROCKETMQ_DETECTOR_TOPIC=orders", "ROCKETMQ_DETECTOR_QUEUE=3"}})
	probe(host.Config{Args: []string{"-topic", "payments", "-queue", "1"}, Env: []string{"ROCKETMQ_DETECTOR_TOPIC=orders"}})
	var got []string
	for _, r := range b.Requests() {
		got = append(got, fmt.Sprintf("%s %s/%d", remotingtest.CodeName(r.Code), r.Topic, r.QueueID))
	}
	want := []string{"GET_MAX_OFFSET TBW102/0", "GET_MAX_OFFSET orders/3", "GET_MAX_OFFSET payments/1"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("broker read %v, want %v", got, want)
	}

	for _, cfg := range []host.Config{
		{Env: []string{"ROCKETMQ_DETECTOR_QUEUE=-1"}},
		{Args: []string{"-queue", "x"}},
		{Args: []string{"-topic", ""}},
		{Args: []string{"stray"}},
	} {
		cfg.Path, cfg.Logger, cfg.StartTimeout = bin, quiet, 5*time.Second
		d, err := host.NewDetector(cfg)
		if err == nil {
			_ = d.Close()
			t.Errorf("NewDetector(%v %v) started, want the plugin to refuse", cfg.Args, cfg.Env)
		}
	}
}

// TestParse checks the flag and environment rules directly, with their
// messages.
func TestParse(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	d, err := parse(nil, env(nil))
	if err != nil || d.Topic != "TBW102" || d.QueueID != 0 || d.Broker != "" {
		t.Fatalf("parse() = %+v, %v, want TBW102 queue 0", d, err)
	}
	d, err = parse([]string{"-queue", "2", "-bname", "broker-b"}, env(map[string]string{"ROCKETMQ_DETECTOR_TOPIC": "T", "ROCKETMQ_DETECTOR_QUEUE": "7"}))
	if err != nil || d.Topic != "T" || d.QueueID != 2 || d.Broker != "broker-b" {
		t.Fatalf("parse() = %+v, %v, want T queue 2 bname broker-b", d, err)
	}
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"ROCKETMQ_DETECTOR_QUEUE": "q"}, `ROCKETMQ_DETECTOR_QUEUE="q"`},
		{[]string{"-queue", "-4"}, nil, "-queue -4"},
		{[]string{"-topic="}, nil, "-topic: empty"},
		{[]string{"x"}, nil, `unexpected arguments ["x"]`},
	} {
		if _, err := parse(tt.args, env(tt.env)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse(%v, %v) error = %v, want it to say %q", tt.args, tt.env, err, tt.want)
		}
	}
}

// TestMqfaultProbe runs `mqfault probe --plugin ./rocketmq-detector
// --timeout 500ms ADDR...` (the command built from this checkout) on a live
// broker, a closed port, a port that accepts connections and never answers,
// and a hung broker: reachable, then unreachable three times.
func TestMqfaultProbe(t *testing.T) {
	mqfault := buildMqfault(t)
	live := broker(t, remotingtest.Fault{}).Addr()
	closed := probetest.ClosedTCP(t)
	silent := probetest.SilentTCP(t)
	hung := broker(t, remotingtest.Fault{Hung: true}).Addr()
	// The plugin beside the command, as the README's ./rocketmq-detector.
	dir := t.TempDir()
	plugin := filepath.Join(dir, "rocketmq-detector")
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, raw, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mqfault, "probe", "--plugin", "./rocketmq-detector", "--timeout", "500ms", live, closed, silent, hung)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("mqfault probe: %v\nstderr:\n%s", err, stderr.String())
		}
		// An exit status for unreachable endpoints is fine; the lines say what each was.
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	want := []struct{ addr, verdict string }{{live, "reachable"}, {closed, "unreachable"}, {silent, "unreachable"}, {hung, "unreachable"}}
	if len(lines) != len(want) {
		t.Fatalf("mqfault probe printed %d lines, want %d:\n%s\nstderr:\n%s", len(lines), len(want), stdout.String(), stderr.String())
	}
	for i, w := range want {
		fields := strings.Fields(lines[i])
		if len(fields) < 2 || fields[0] != w.addr || fields[1] != w.verdict {
			t.Errorf("line %d = %q, want %q %s", i, lines[i], w.addr, w.verdict)
		}
	}
	t.Logf("mqfault probe:\n%s", stdout.String())
}

// rootFlags drops a -modfile meant for this module from GOFLAGS.
func rootFlags(goflags string) string {
	var keep []string
	for _, f := range strings.Fields(goflags) {
		if !strings.HasPrefix(f, "-modfile") && !strings.HasPrefix(f, "--modfile") {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}

// buildMqfault builds cmd/mqfault of this checkout (the root module, in
// module mode) into a temporary directory.
func buildMqfault(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "mqfault")); err != nil {
		t.Fatalf("no cmd/mqfault at %s: %v", root, err)
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out := filepath.Join(t.TempDir(), "mqfault")
	cmd := exec.Command(gobin, "build", "-o", out, "./cmd/mqfault")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+rootFlags(os.Getenv("GOFLAGS")))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mqfault: %v\n%s", err, b)
	}
	return out
}
