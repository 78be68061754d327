package host_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/plugins/host"
)

// patience bounds every wait for something a plugin process does. It is a
// guard against a hung test, not a speed target.
const patience = 30 * time.Second

// eventLog collects a plugin's events for a test to wait on.
type eventLog struct {
	ch chan host.Event
}

func newEventLog() *eventLog { return &eventLog{ch: make(chan host.Event, 256)} }

// record is a Config.OnEvent.
func (l *eventLog) record(e host.Event) {
	select {
	case l.ch <- e:
	default:
		panic("eventLog: too many events")
	}
}

// next returns the next event if there is one.
func (l *eventLog) next() (host.Event, bool) {
	select {
	case e := <-l.ch:
		return e, true
	default:
		return host.Event{}, false
	}
}

// wait returns the next event of kind k, skipping others.
func (l *eventLog) wait(t testing.TB, k host.EventKind) host.Event {
	t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case e := <-l.ch:
			if e.Kind == k {
				return e
			}
		case <-timeout:
			t.Fatalf("no %v event within %v", k, patience)
		}
	}
}

// logCapture is a slog handler that keeps records and lets a test wait for
// one whose message contains a text.
type logCapture struct {
	mu      sync.Mutex // guards records and waiters
	records []slog.Record
	attrs   []slog.Attr
	waiters []waiter
	parent  *logCapture
}

type waiter struct {
	text string
	ch   chan slog.Record
}

func (c *logCapture) root() *logCapture {
	if c.parent != nil {
		return c.parent.root()
	}
	return c
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(c.attrs...)
	root := c.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	root.records = append(root.records, r)
	kept := root.waiters[:0]
	for _, w := range root.waiters {
		if strings.Contains(r.Message, w.text) {
			w.ch <- r
			continue
		}
		kept = append(kept, w)
	}
	root.waiters = kept
	return nil
}

func (c *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCapture{parent: c.root(), attrs: append(append([]slog.Attr(nil), c.attrs...), as...)}
}

func (c *logCapture) WithGroup(string) slog.Handler { return c }

// waitFor returns the first record (past or future) whose message contains
// text.
func (c *logCapture) waitFor(t testing.TB, text string) slog.Record {
	t.Helper()
	root := c.root()
	root.mu.Lock()
	for _, r := range root.records {
		if strings.Contains(r.Message, text) {
			root.mu.Unlock()
			return r
		}
	}
	w := waiter{text: text, ch: make(chan slog.Record, 1)}
	root.waiters = append(root.waiters, w)
	root.mu.Unlock()
	select {
	case r := <-w.ch:
		return r
	case <-time.After(patience):
		t.Fatalf("no log record containing %q within %v", text, patience)
		return slog.Record{}
	}
}

// matching returns the records so far whose message contains text.
func (c *logCapture) matching(text string) []slog.Record {
	root := c.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	var out []slog.Record
	for _, r := range root.records {
		if strings.Contains(r.Message, text) {
			out = append(out, r)
		}
	}
	return out
}

// attr returns the value of the record's attribute key.
func attr(r slog.Record, key string) (slog.Value, bool) {
	var v slog.Value
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
			return false
		}
		return true
	})
	return v, found
}

func slogNew(h slog.Handler) *slog.Logger { return slog.New(h) }
