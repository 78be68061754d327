package sdk

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"
)

func TestLoggerWritesHclogJSON(t *testing.T) {
	var buf bytes.Buffer
	old := stderr
	stderr = &buf
	defer func() { stderr = old }()

	Logger(slog.LevelDebug).Warn("probing", "endpoint", "h:1", slog.Group("g", "k", 1))
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("Logger wrote %q: %v", buf.String(), err)
	}
	if m["@message"] != "probing" || m["@level"] != "warn" || m["endpoint"] != "h:1" {
		t.Errorf("Logger wrote %v, want @message probing, @level warn, endpoint h:1", m)
	}
	ts, _ := m["@timestamp"].(string)
	if _, err := time.Parse(timestampFormat, ts); err != nil {
		t.Errorf("@timestamp %q does not parse as hclog's format: %v", ts, err)
	}
	if g, ok := m["g"].(map[string]any); !ok || g["k"] != 1.0 {
		t.Errorf("group g = %v, want {k: 1}", m["g"])
	}
}

func TestLoggerLevel(t *testing.T) {
	var buf bytes.Buffer
	old := stderr
	stderr = &buf
	defer func() { stderr = old }()
	Logger(slog.LevelInfo).Debug("hidden")
	if buf.Len() != 0 {
		t.Errorf("Logger(Info) wrote %q for a debug line, want nothing", buf.String())
	}
}

func TestLevelName(t *testing.T) {
	tests := []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug - 4, "trace"},
		{slog.LevelDebug, "debug"},
		{slog.LevelInfo, "info"},
		{slog.LevelWarn, "warn"},
		{slog.LevelError, "error"},
		{slog.LevelError + 4, "error"},
	}
	for _, tt := range tests {
		if got := levelName(tt.level); got != tt.want {
			t.Errorf("levelName(%v) = %q, want %q", tt.level, got, tt.want)
		}
	}
}

// TestWatchHost: the end of the host's pipe (the host is gone) calls gone,
// and nothing before it does.
func TestWatchHost(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	gone := make(chan struct{})
	go watchHost(r, func() { close(gone) })
	if _, err := w.Write([]byte("not the end\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
		t.Fatal("gone called while the host's end is open")
	case <-time.After(50 * time.Millisecond):
	}
	w.Close() // as the kernel does when the host dies
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("gone not called 30 s after the host's end closed")
	}
}

// TestWatchHostReadError: a stdin that cannot be read (closed) says nothing
// about the host: gone is not called.
func TestWatchHostReadError(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.Close()
	called := false
	watchHost(r, func() { called = true })
	if called {
		t.Error("gone called on a read error")
	}
	if isPipe(r) {
		t.Error("isPipe(a closed pipe) = true")
	}
	if f, err := os.Open(os.DevNull); err == nil {
		defer f.Close()
		if isPipe(f) {
			t.Errorf("isPipe(%s) = true", os.DevNull)
		}
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	defer w2.Close()
	if !isPipe(r2) {
		t.Error("isPipe(a pipe) = false")
	}
}
