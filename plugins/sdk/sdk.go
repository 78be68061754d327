// Package sdk is what a plugin author needs to turn a detector or a batch
// filter into an mqfault plugin binary: one call from main.
//
//	func main() {
//		sdk.ServeDetector(probe.TCPDetector{})
//	}
//
// A plugin is started by the host (package plugins/host), never by hand: run
// directly it prints a notice and exits with status 1. It exits (status 3)
// when its host is gone, however the host ended: the host holds the
// plugin's standard input open while it runs (protocol.HostWatchKey), so
// leave stdin to the SDK. The host talks to it
// over gRPC with go-plugin's handshake, mutual TLS and protocol version
// negotiation; errors the plugin returns cross as explicit codes (see package
// plugins/protocol), so return the sentinels the host knows: wrap
// probe.ErrInconclusive when a probe tells nothing, ErrNotServing when
// the endpoint says it is not serving, ErrInvalidEndpoint for an address the
// plugin cannot probe.
//
// Log with Logger: its lines reach the host's slog logger with their level
// and attributes. Anything else written to stdout or stderr reaches it too,
// as plain lines.
package sdk

import (
	"io"
	"log/slog"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/plugins/protocol"
)

// BatchFilter is what a filter plugin serves: a decision over all the queues
// of one route at once (see protocol.BatchFilter).
type BatchFilter = protocol.BatchFilter

// BatchFilterFunc adapts a function to a BatchFilter.
type BatchFilterFunc = protocol.BatchFilterFunc

// Sentinels a plugin returns (or wraps) so the host sees the same error.
var (
	// ErrNotServing: the endpoint answered that it is not serving.
	ErrNotServing = protocol.ErrNotServing
	// ErrInvalidEndpoint: the endpoint is not an address the plugin can probe.
	ErrInvalidEndpoint = protocol.ErrInvalidEndpoint
)

// stderr is the process's standard error as it was before go-plugin's Serve
// redirected os.Stderr into its stdio stream: the host reads log lines here.
var stderr io.Writer = os.Stderr

// ServeDetector serves d as a detector plugin and returns when the host ends
// the plugin. d's Detect is called concurrently, with a ctx whose deadline is
// the time the host gave the probe; it should answer by then (an error
// wrapping context.DeadlineExceeded says the endpoint did not answer in
// time: unreachable). A Detect that overstays its deadline did not answer:
// the host is told "inconclusive" (probe.ErrNoAnswer) a probe.Grace
// later. A panic in it is answered as an inconclusive probe.
func ServeDetector(d probe.ServiceDetector) {
	serve(protocol.KindDetector, &protocol.DetectorPlugin{Impl: d})
}

// ServeFilter serves f as a filter plugin and returns when the host ends the
// plugin. f's Decide is called concurrently, once per route change and
// refresh; a panic in it is reported to the host as a failed decision.
func ServeFilter(f BatchFilter) {
	serve(protocol.KindFilter, &protocol.FilterPlugin{Impl: f})
}

func serve(kind protocol.Kind, p plugin.Plugin) {
	if os.Getenv(protocol.HostWatchKey) == protocol.HostWatchStdin && isPipe(os.Stdin) {
		// Not a pipe: something between the host and the plugin (a wrapper
		// script's redirection) took the host's away; nothing to watch.
		go watchHost(os.Stdin, func() { os.Exit(exitHostGone) })
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  protocol.Handshake(kind),
		VersionedPlugins: map[int]plugin.PluginSet{protocol.ProtocolVersion: {string(kind): p}},
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "go-plugin",
			Level:      hclog.Info,
			Output:     stderr,
			JSONFormat: true,
		}),
	})
}

// exitHostGone is the plugin's exit status when its host is gone.
const exitHostGone = 3

// watchHost reads r, the standard input the host holds open and never
// writes to, until it ends, then calls gone: the host has exited (a
// plugin whose host died by SIGKILL would otherwise run on, orphaned). A
// read error other than the end (a closed descriptor) tells nothing: it
// returns without calling gone.
func watchHost(r io.Reader, gone func()) {
	if _, err := io.Copy(io.Discard, r); err == nil {
		gone()
	}
}

// isPipe reports whether f is a pipe.
func isPipe(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// timestampFormat is the time format of hclog's JSON lines.
const timestampFormat = "2006-01-02T15:04:05.000000Z07:00"

// Logger returns a logger whose lines the host parses: JSON on the
// process's standard error, with hclog's keys (@level, @message,
// @timestamp). The host logs each line through its own slog logger, with the
// line's level and attributes and the plugin's name and pid. Levels below
// level are dropped here.
func Logger(level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format(timestampFormat))
			case slog.MessageKey:
				return slog.String("@message", a.Value.String())
			case slog.LevelKey:
				lvl, _ := a.Value.Any().(slog.Level)
				return slog.String("@level", levelName(lvl))
			}
			return a
		},
	}))
}

// levelName is hclog's name for a slog level.
func levelName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	}
	return "error"
}
