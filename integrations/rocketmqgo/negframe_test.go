package rocketmqgo_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "unsafe" // go:linkname

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// negFrameChild makes TestE2ENegativeFrameLength run its scenario in this
// process: a crash there must not take the test binary down.
const negFrameChild = "ROCKETMQGO_NEGATIVE_FRAME_CHILD"

// TestE2ENegativeFrameLength: a "broker" answering every frame with
// ff ff ff f0 00 00 00 00 (a negative frame length) makes rocketmq-client-go
// v2.1.2's receive loop panic (makeslice: len out of range) in a goroutine
// whose recover wrapper does nothing unless primitive.PanicHandler is set:
// the process dies. Through rocketmqgo the process survives, the handler a
// user set before is still called, every send ends stored on the healthy
// broker (the attempt to the bad one times out at the per-attempt cap and is
// retried), and the bad broker is isolated. The scenario runs in a child
// process, so that on a client without the handler the failure is the
// child's crash, reported here.
func TestE2ENegativeFrameLength(t *testing.T) {
	if mode := os.Getenv(negFrameChild); mode != "" {
		negativeFrameScenario(t, mode == "user")
		return
	}
	for _, tt := range []struct {
		mode string
		want []string
	}{
		{"default", []string{"client panic(s); broker-bad isolated"}},
		{"user", []string{"user handler called", "client panic(s); broker-bad isolated"}},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestE2ENegativeFrameLength$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), negFrameChild+"="+tt.mode)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the child process failed (%v): the negative frame crashed it or its checks failed:\n%s", err, clipOutput(out))
			}
			for _, want := range append(tt.want, "--- PASS: TestE2ENegativeFrameLength") {
				if !bytes.Contains(out, []byte(want)) {
					t.Errorf("child output lacks %q:\n%s", want, clipOutput(out))
				}
			}
		})
	}
}

func clipOutput(b []byte) string {
	if len(b) > 6000 {
		return string(b[:3000]) + "\n…\n" + string(b[len(b)-3000:])
	}
	return string(b)
}

// The client's panic handler variable, by link name (its Go name differs
// between v2.1.2 and master; see panics.go).
//
//go:linkname userHandlerV212 github.com/apache/rocketmq-client-go/v2/primitive.PanicHandler
var userHandlerV212 func(any)

//go:linkname userHandlerMaster github.com/apache/rocketmq-client-go/v2/primitive.DefaultPanicHandler
var userHandlerMaster func(any)

// garbageBroker accepts connections and answers every frame it reads with a
// negative frame length.
func garbageBroker(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var prefix [4]byte
					if _, err := io.ReadFull(c, prefix[:]); err != nil {
						return
					}
					if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(prefix[:]))); err != nil {
						return
					}
					if _, err := c.Write([]byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0}); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

func negativeFrameScenario(t *testing.T, userHandler bool) {
	var userCalls atomic.Int64
	if userHandler {
		// A handler of the user's, set before the producer: the client's
		// variable (v2.1.2 PanicHandler, master DefaultPanicHandler).
		userHandlerV212 = func(any) { userCalls.Add(1) }
		userHandlerMaster = userHandlerV212
	}
	var logs syncBuffer

	ns, err := remotingtest.NewNameServer(quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	good, err := remotingtest.NewBroker("broker-a", quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = good.Close() })
	bad := garbageBroker(t)
	route := remotingtest.RouteOf(4, good)
	route.Queues = append(route.Queues, remotingtest.QueueData{BrokerName: "broker-bad", ReadQueueNums: 4, WriteQueueNums: 4, Perm: remotingtest.PermReadWrite})
	route.Brokers = append(route.Brokers, remotingtest.BrokerData{Cluster: good.Cluster(), BrokerName: "broker-bad", Addrs: map[int64]string{remotingtest.MasterID: bad}})
	if err := ns.SetRoute(e2eTopic, route); err != nil {
		t.Fatal(err)
	}
	cfg := mqproducer.DefaultConfig()
	cfg.MaxTimeoutPerRequest = 300 * time.Millisecond
	cfg.Timeout = 5 * time.Second
	p, err := rocketmqgo.NewProducer([]producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns.Addr()})),
		producer.WithGroupName("pg-negframe"),
		producer.WithInstanceName("negframe"),
	}, rocketmqgo.WithSendConfig(cfg), rocketmqgo.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	badAttempts := 0
	for i := range 12 {
		m := message(i)
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		res, err := p.SendSync(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("send %d: %v, want it stored on broker-a", i, err)
		}
		if res.MessageQueue.BrokerName != "broker-a" || res.MsgID != uniqKey(m) {
			t.Fatalf("send %d = %v, want stored on broker-a", i, res)
		}
		if item, ok := p.Strategy().Table().Item("broker-bad"); ok && !item.Available {
			badAttempts++
		}
	}
	if badAttempts == 0 {
		t.Fatalf("broker-bad was never tried and isolated: the scenario did not reach the garbage")
	}
	if userHandler {
		if userCalls.Load() == 0 {
			t.Fatalf("the user's PanicHandler was not called")
		}
		t.Logf("user handler called %d times", userCalls.Load())
	}
	recovered := strings.Count(logs.String(), "rocketmq-client-go goroutine panicked")
	if recovered == 0 {
		t.Fatalf("rocketmqgo logged no recovered panic:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "makeslice: len out of range") {
		t.Errorf("log lacks the panic's value:\n%s", logs.String())
	}
	t.Logf("rocketmqgo recovered %d client panic(s); broker-bad isolated", recovered)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
