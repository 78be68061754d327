package host

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/route"
)

// records is a slog handler that keeps what it is given.
type records struct {
	mu   sync.Mutex // guards list
	list []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func TestLogPluginLine(t *testing.T) {
	tests := []struct {
		name      string
		line      string
		wantMsg   string
		wantLevel slog.Level
		wantAttrs int
	}{
		{"hclog json", `{"@level":"error","@message":"bad","@timestamp":"2024-01-01T00:00:00.000000Z","@module":"m","k":1}`, "bad", slog.LevelError, 2},
		{"trace", `{"@level":"trace","@message":"t"}`, "t", slog.LevelDebug - 4, 0},
		{"unknown level", `{"@level":"loud","@message":"x"}`, "x", slog.LevelInfo, 0},
		{"message not a string", `{"@message":5,"@level":"info"}`, `{"@message":5,"@level":"info"}`, slog.LevelWarn, 0},
		{"level not a string", `{"@message":"m","@level":[1]}`, "m", slog.LevelInfo, 0},
		{"broken json", `{"@message":`, `{"@message":`, slog.LevelWarn, 0},
		{"plain", "panic: oh no\r", "panic: oh no", slog.LevelWarn, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r records
			logPluginLine(slog.New(&r), []byte(tt.line), slog.LevelWarn)
			if len(r.list) != 1 {
				t.Fatalf("logged %d records, want 1", len(r.list))
			}
			rec := r.list[0]
			if rec.Message != tt.wantMsg || rec.Level != tt.wantLevel || rec.NumAttrs() != tt.wantAttrs {
				t.Errorf("logged %v %q with %d attrs, want %v %q with %d", rec.Level, rec.Message, rec.NumAttrs(), tt.wantLevel, tt.wantMsg, tt.wantAttrs)
			}
		})
	}
	var r records
	logPluginLine(slog.New(&r), []byte("\r\n"), slog.LevelWarn)
	if len(r.list) != 0 {
		t.Errorf("an empty line logged %d records, want 0", len(r.list))
	}
}

func TestLineLogger(t *testing.T) {
	var r records
	w := newLineLogger(slog.New(&r), slog.LevelInfo, newOutputLimiter(clock.Real{}, 100, slog.New(&r)))
	for _, chunk := range []string{"one\ntw", "o\n", "", "three"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	_, _ = w.Write([]byte(strings.Repeat("x", maxLogLine+1)))
	var got []string
	for _, rec := range r.list {
		got = append(got, rec.Message[:min(len(rec.Message), 5)])
	}
	if strings.Join(got, ",") != "one,two,three" {
		t.Errorf("lines logged = %v, want one, two, then the long line starting with three", got)
	}
}

// levelHandler is records that takes only records at or above min.
type levelHandler struct {
	records
	min slog.Level
}

func (h *levelHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

// TestOutputLimiter checks the token bucket on a manual clock: a burst of
// rate lines, then drops counted and reported a second after the first,
// refills at rate a second, lines below the logger's level free, the rest
// reported at close.
func TestOutputLimiter(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	var out, host records
	log := slog.New(&out)
	o := newOutputLimiter(clk, 3, slog.New(&host))
	write := func(n int) {
		for i := range n {
			o.line(log, []byte("line "+strconv.Itoa(i)+"\n"), slog.LevelWarn)
		}
	}
	dropped := func() (n int64) {
		for _, r := range host.list {
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "dropped" {
					n += a.Value.Int64()
				}
				return true
			})
		}
		return n
	}
	write(10)
	if len(out.list) != 3 || len(host.list) != 0 {
		t.Fatalf("10 lines at once: %d logged, %d reports; want the burst of 3, no report yet", len(out.list), len(host.list))
	}
	clk.Advance(time.Second) // the report; and 3 more tokens
	if len(host.list) != 1 || dropped() != 7 || host.list[0].Level != slog.LevelWarn {
		t.Fatalf("a second later: reports %v, want one WARN report of 7 dropped", host.list)
	}
	write(5)
	if len(out.list) != 6 {
		t.Errorf("after a second's refill: %d logged in all, want 6", len(out.list))
	}
	clk.Advance(time.Second)
	quiet := slog.New(&levelHandler{min: slog.LevelError})
	o.line(quiet, []byte(`{"@level":"debug","@message":"below the level"}`), slog.LevelWarn)
	write(3) // the debug line cost no token: all three are logged
	if len(out.list) != 9 {
		t.Errorf("after a filtered line and a refill: %d logged, want 9", len(out.list))
	}
	write(4)
	o.close()
	if dropped() != 7+2+4 || clk.Pending() != 0 {
		t.Errorf("after close: %d dropped reported, %d timers pending; want 13, 0", dropped(), clk.Pending())
	}
}

func TestHCLogger(t *testing.T) {
	var r records
	var l hclog.Logger = newHCLogger(slog.New(&r))
	l = l.Named("a").Named("b").With("k", "v")
	l.Error("boom", "x", 1)
	l.Log(hclog.Off, "never")
	if len(r.list) != 1 || r.list[0].Level != slog.LevelDebug || l.Name() != "a.b" || len(l.ImpliedArgs()) != 2 {
		t.Errorf("hclog adapter logged %v (name %q, args %v), want one debug record from a.b with k=v", r.list, l.Name(), l.ImpliedArgs())
	}
	if l.GetLevel() != hclog.Debug || !l.IsTrace() {
		t.Errorf("GetLevel() = %v with a logger that takes debug, want Debug", l.GetLevel())
	}
	l.StandardLogger(nil).Print("std")
	if len(r.list) != 2 {
		t.Errorf("StandardLogger did not log")
	}
}

func TestNewVerdicts(t *testing.T) {
	qs := []route.MessageQueue{
		{BrokerName: "a", QueueID: 0}, {BrokerName: "b", QueueID: 0}, {BrokerName: "a", QueueID: 1},
		{BrokerName: "b", QueueID: 1}, {BrokerName: "a", QueueID: 2},
	}
	v := newVerdicts(qs, []bool{true, false, true, false, false})
	if b := v.brokers["b"]; b.ids != nil || b.admit {
		t.Errorf("broker b = %+v, want all rejected with no per-queue map", b)
	}
	a := v.brokers["a"]
	if a.ids == nil || !a.ids[0] || !a.ids[1] || a.ids[2] {
		t.Errorf("broker a = %+v, want queues 0 and 1 admitted, 2 rejected", a)
	}
	f := &Filter{}
	f.snap.Store(&snapshot{topics: map[string]*verdicts{"T": v}})
	for _, tt := range []struct {
		q    route.MessageQueue
		want bool
	}{
		{route.MessageQueue{Topic: "T", BrokerName: "a", QueueID: 1}, true},
		{route.MessageQueue{Topic: "T", BrokerName: "a", QueueID: 2}, false},
		{route.MessageQueue{Topic: "T", BrokerName: "a", QueueID: 9}, true},
		{route.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 9}, false},
		{route.MessageQueue{Topic: "T", BrokerName: "z"}, true},
		{route.MessageQueue{Topic: "U", BrokerName: "b"}, true},
	} {
		if got := f.Filter(tt.q); got != tt.want {
			t.Errorf("Filter(%s/%s) = %v, want %v", tt.q.Topic, tt.q, got, tt.want)
		}
	}
}
