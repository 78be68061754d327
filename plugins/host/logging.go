package host

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// maxLogLine bounds one line of plugin output kept for the log.
const maxLogLine = 64 << 10

// trimLine drops the line break and bounds the line to maxLogLine bytes.
func trimLine(line []byte) []byte {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > maxLogLine {
		line = append(line[:maxLogLine:maxLogLine], "…"...)
	}
	return line
}

// logPluginLine logs one line the plugin wrote and reports whether l took
// it. A JSON object with a string "@message" (hclog's format, which
// sdk.Logger writes) is logged at its "@level" with its other keys as
// attributes; anything else is logged as is, at level plain. Nothing a
// plugin writes can make this panic.
func logPluginLine(l *slog.Logger, line []byte, plain slog.Level) bool {
	line = trimLine(line)
	if len(line) == 0 {
		return false
	}
	ctx := context.Background()
	if line[0] == '{' {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil {
			if msg, ok := m["@message"].(string); ok {
				name, _ := m["@level"].(string)
				level := levelOf(name)
				if !l.Enabled(ctx, level) {
					return false
				}
				keys := make([]string, 0, len(m))
				for k := range m {
					if k != "@message" && k != "@level" && k != "@timestamp" {
						keys = append(keys, k)
					}
				}
				slices.Sort(keys)
				attrs := make([]slog.Attr, len(keys))
				for i, k := range keys {
					attrs[i] = slog.Any(strings.TrimPrefix(k, "@"), m[k])
				}
				l.LogAttrs(ctx, level, msg, attrs...)
				return true
			}
		}
	}
	if !l.Enabled(ctx, plain) {
		return false
	}
	l.Log(ctx, plain, string(line))
	return true
}

// levelOf maps hclog's level names to slog levels; an unknown name is Info.
func levelOf(name string) slog.Level {
	switch strings.ToLower(name) {
	case "trace":
		return slog.LevelDebug - 4
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// lineLogger is an io.Writer that logs each complete line written to it
// through the plugin's output limiter (go-plugin's stdio stream of the
// plugin's stdout and stderr).
type lineLogger struct {
	l     *slog.Logger
	level slog.Level
	out   *outputLimiter

	mu  sync.Mutex // guards buf
	buf []byte
}

func newLineLogger(l *slog.Logger, level slog.Level, out *outputLimiter) *lineLogger {
	return &lineLogger{l: l, level: level, out: out}
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.out.line(w.l, w.buf[:i], w.level)
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLogLine {
		w.out.line(w.l, w.buf, w.level)
		w.buf = nil
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}

// hclogger is the hclog.Logger go-plugin requires, writing to slog. go-plugin
// logs its own workings through it; they go to slog at Debug level whatever
// their hclog level, since the host logs what matters (exits, restarts,
// start failures) itself.
type hclogger struct {
	l    *slog.Logger
	name string
	args []any
}

var _ hclog.Logger = (*hclogger)(nil)

func newHCLogger(l *slog.Logger) *hclogger {
	return &hclogger{l: l.With("logger", "go-plugin")}
}

func (h *hclogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	h.l.Log(context.Background(), slog.LevelDebug, msg, args...)
}

func (h *hclogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogger) enabled() bool { return h.l.Enabled(context.Background(), slog.LevelDebug) }

func (h *hclogger) IsTrace() bool { return h.enabled() }
func (h *hclogger) IsDebug() bool { return h.enabled() }
func (h *hclogger) IsInfo() bool  { return h.enabled() }
func (h *hclogger) IsWarn() bool  { return h.enabled() }
func (h *hclogger) IsError() bool { return h.enabled() }

func (h *hclogger) ImpliedArgs() []any { return slices.Clone(h.args) }

func (h *hclogger) With(args ...any) hclog.Logger {
	return &hclogger{l: h.l.With(args...), name: h.name, args: append(slices.Clone(h.args), args...)}
}

func (h *hclogger) Name() string { return h.name }

func (h *hclogger) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *hclogger) ResetNamed(name string) hclog.Logger {
	return &hclogger{l: h.l.With("component", name), name: name, args: h.args}
}

func (h *hclogger) SetLevel(hclog.Level) {}

func (h *hclogger) GetLevel() hclog.Level {
	if h.enabled() {
		return hclog.Debug
	}
	return hclog.Off
}

func (h *hclogger) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(h.l.Handler(), slog.LevelDebug)
}

func (h *hclogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(nil).Writer()
}
