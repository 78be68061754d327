package sdk

import (
	"bytes"
	"encoding/json"
	"log/slog"
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
