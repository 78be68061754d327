package main

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	goleak.VerifyTestMain(m, remotingtest.IgnoreClientGoroutines()...)
}

// TestRunLoopback: the default run (loopback servers, one broker busy)
// stores every message and returns nil (exit status 0).
func TestRunLoopback(t *testing.T) {
	if err := run("", "TopicTest", 6); err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
}

// TestRunNoRoute: against a name server without the topic, every message
// fails with "no route": run returns an error (exit status 1) that counts
// the failures and says what to do.
func TestRunNoRoute(t *testing.T) {
	ns, err := remotingtest.NewNameServer(remotingtest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	err = run(ns.Addr(), "Missing", 3)
	if err == nil {
		t.Fatal("run() = nil with every message failed, want an error")
	}
	if !errors.Is(err, mqproducer.ErrNoRoute) {
		t.Errorf("run() = %v, want it to wrap producer.ErrNoRoute", err)
	}
	for _, want := range []string{"3 of 3 messages failed", `no route for topic "Missing"`, "autoCreateTopicEnable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("run() = %v, want it to say %q", err, want)
		}
	}
}

// TestRunFlags: nothing to send is an error, not a silent success.
func TestRunFlags(t *testing.T) {
	for _, tt := range []struct {
		topic string
		n     int
		want  string
	}{{"T", 0, "-n 0"}, {"T", -5, "-n -5"}, {"", 1, "-topic: empty"}} {
		if err := run("127.0.0.1:1", tt.topic, tt.n); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q, %d) = %v, want an error saying %q", tt.topic, tt.n, err, tt.want)
		}
	}
}
