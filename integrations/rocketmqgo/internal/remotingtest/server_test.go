package remotingtest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
)

// hangGuard bounds every wait of these tests, so a bug fails them instead of
// hanging; no assertion depends on it.
const hangGuard = 10 * time.Second

var quietLogger = slog.New(slog.DiscardHandler)

// rawClient speaks the wire format directly, to send what the Go client never would.
type rawClient struct {
	t      testing.TB
	conn   net.Conn
	r      *bufio.Reader
	opaque int32
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("Dial(%s) error = %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawClient{t: t, conn: c, r: bufio.NewReader(c)}
}

func (rc *rawClient) writeRaw(b []byte) {
	rc.t.Helper()
	if _, err := rc.conn.Write(b); err != nil {
		rc.t.Fatalf("Write() error = %v", err)
	}
}

// send writes cmd with the next opaque and returns that opaque.
func (rc *rawClient) send(cmd command) int32 {
	rc.t.Helper()
	rc.opaque++
	cmd.opaque = rc.opaque
	if cmd.language == "" {
		cmd.language = "GO"
	}
	frame, err := encodeFrame(&cmd)
	if err != nil {
		rc.t.Fatalf("encodeFrame() error = %v", err)
	}
	rc.writeRaw(frame)
	return cmd.opaque
}

// recv reads one frame; err is the read error (io.EOF when the server closed).
func (rc *rawClient) recv() (*command, error) {
	_ = rc.conn.SetReadDeadline(time.Now().Add(hangGuard))
	return readCommand(rc.r, DefaultMaxFrameSize)
}

func (rc *rawClient) call(cmd command) *command {
	rc.t.Helper()
	opaque := rc.send(cmd)
	resp, err := rc.recv()
	if err != nil {
		rc.t.Fatalf("reading the answer to %s: %v", CodeName(cmd.code), err)
	}
	if resp.opaque != opaque || !resp.isResponse() {
		rc.t.Fatalf("answer opaque=%d flag=%d, want opaque=%d with the response flag", resp.opaque, resp.flag, opaque)
	}
	return resp
}

func newTestBroker(t *testing.T, opts ...Option) *Broker {
	t.Helper()
	b, err := NewBroker("broker-a", append([]Option{WithLogger(quietLogger)}, opts...)...)
	if err != nil {
		t.Fatalf("NewBroker() error = %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newTestNameServer(t *testing.T) *NameServer {
	t.Helper()
	ns, err := NewNameServer(WithLogger(quietLogger))
	if err != nil {
		t.Fatalf("NewNameServer() error = %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	return ns
}

func awaitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// settled waits until entry seq of the log has an outcome other than pending.
func settled(seq int) func([]Request) bool {
	return func(rs []Request) bool {
		for _, r := range rs {
			if r.Seq == seq && r.Outcome != OutcomePending {
				return true
			}
		}
		return false
	}
}

func entry(t *testing.T, rs []Request, seq int) Request {
	t.Helper()
	for _, r := range rs {
		if r.Seq == seq {
			return r
		}
	}
	t.Fatalf("no log entry #%d in %v", seq, rs)
	return Request{}
}

func TestUnknownRequestCode(t *testing.T) {
	b := newTestBroker(t)
	ns := newTestNameServer(t)
	type server interface {
		Addr() string
		Requests() []Request
	}
	for _, srv := range []struct {
		name string
		s    server
	}{{"broker", b}, {"name server", ns}} {
		for _, ser := range []byte{serializeJSON, serializeRocketMQ} {
			t.Run(srv.name, func(t *testing.T) {
				rc := dialRaw(t, srv.s.Addr())
				resp := rc.call(command{code: 999, serialize: ser})
				if resp.code != CodeRequestCodeNotSupported {
					t.Errorf("answer code = %d, want %d", resp.code, CodeRequestCodeNotSupported)
				}
				if !strings.Contains(resp.remark, "request code 999 is not supported") {
					t.Errorf("answer remark = %q, want it to name code 999", resp.remark)
				}
				if resp.serialize != ser {
					t.Errorf("answer serialize type = %d, want the request's %d", resp.serialize, ser)
				}
				// The connection still works.
				if resp := rc.call(command{code: 998, serialize: ser}); resp.code != CodeRequestCodeNotSupported {
					t.Errorf("second answer code = %d, want %d", resp.code, CodeRequestCodeNotSupported)
				}
				rs := srv.s.Requests()
				last := rs[len(rs)-1]
				if last.Code != 998 || last.Outcome != OutcomeAnswered || last.ResponseCode != CodeRequestCodeNotSupported {
					t.Errorf("last log entry = %v, want code 998 answered %d", last, CodeRequestCodeNotSupported)
				}
			})
		}
	}
}

func TestMalformedFrameClosesOnlyItsConnection(t *testing.T) {
	tests := []struct {
		name  string
		bytes []byte
	}{
		{"negative length", []byte{0x80, 0, 0, 0}},
		{"oversized", []byte{0x7F, 0, 0, 0}},
		{"bad header json", jsonFrame("not json")},
		{"unknown serialize type", frameOf(7<<24, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTestBroker(t)
			healthy := dialRaw(t, b.Addr())
			bad := dialRaw(t, b.Addr())
			bad.writeRaw(tt.bytes)
			if cmd, err := bad.recv(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("after a malformed frame recv() = %v, %v; want the connection closed", cmd, err)
			}
			rs, err := b.Await(awaitCtx(t), func(rs []Request) bool { return len(rs) == 1 })
			if err != nil {
				t.Fatalf("Await() error = %v", err)
			}
			if rs[0].Outcome != OutcomeMalformed || rs[0].Code != -1 || rs[0].Remark == "" {
				t.Errorf("log entry = %+v, want a malformed entry with a remark", rs[0])
			}
			if resp := healthy.call(command{code: CodeHeartbeat, body: []byte(`{"clientID":"c"}`)}); resp.code != CodeSuccess {
				t.Errorf("heartbeat on another connection answered %d, want %d", resp.code, CodeSuccess)
			}
		})
	}
}

func sendV1(topic string, queue string, props string, body string) command {
	return command{code: CodeSendMessage, extFields: map[string]string{
		"producerGroup": "pg", "topic": topic, "queueId": queue, "properties": props, "batch": "false",
	}, body: []byte(body)}
}

func TestSendVariants(t *testing.T) {
	b := newTestBroker(t)
	rc := dialRaw(t, b.Addr())
	batch := append(encodeBatchMessage([]byte("a"), "UNIQ_KEY\x01b1\x02"), encodeBatchMessage([]byte("bc"), "KEYS\x01k\x02")...)
	tests := []struct {
		name       string
		cmd        command
		wantCode   int16
		wantQueue  string
		wantOffset string
		wantMsgs   int
	}{
		{"v1", sendV1("T", "1", "UNIQ_KEY\x01u1\x02KEYS\x01k1 k2\x02", "body"), CodeSuccess, "1", "0", 1},
		{"v1 same queue again", sendV1("T", "1", "", "x"), CodeSuccess, "1", "1", 1},
		{"v2", command{code: CodeSendMessageV2, serialize: serializeRocketMQ, extFields: map[string]string{
			"a": "pg", "b": "T", "e": "2", "i": "UNIQ_KEY\x01u2\x02",
		}, body: []byte("b")}, CodeSuccess, "2", "0", 1},
		{"batch", command{code: CodeSendBatchMessage, extFields: map[string]string{
			"a": "pg", "b": "T", "e": "1", "m": "true",
		}, body: batch}, CodeSuccess, "1", "2", 2},
		{"batch again after two", sendV1("T", "1", "", "x"), CodeSuccess, "1", "4", 1},
		{"no topic", command{code: CodeSendMessage, extFields: map[string]string{"queueId": "0"}}, CodeSystemError, "", "", 0},
		{"bad batch body", command{code: CodeSendBatchMessage, extFields: map[string]string{"b": "T", "e": "0"},
			body: []byte{1, 2, 3}}, CodeSystemError, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := rc.call(tt.cmd)
			if resp.code != tt.wantCode {
				t.Fatalf("answer code = %d (%q), want %d", resp.code, resp.remark, tt.wantCode)
			}
			rs := b.Requests()
			last := rs[len(rs)-1]
			if last.Outcome != OutcomeAnswered || last.ResponseCode != tt.wantCode {
				t.Errorf("log entry = %v, want answered %d", last, tt.wantCode)
			}
			if len(last.Messages) != tt.wantMsgs {
				t.Errorf("log entry has %d messages, want %d", len(last.Messages), tt.wantMsgs)
			}
			if tt.wantCode != CodeSuccess {
				if last.QueueOffset != -1 || resp.remark == "" {
					t.Errorf("failed send logged offset %d, remark %q; want -1 and a remark", last.QueueOffset, resp.remark)
				}
				return
			}
			if got := resp.extFields["queueId"]; got != tt.wantQueue {
				t.Errorf("answer queueId = %q, want %q", got, tt.wantQueue)
			}
			if got := resp.extFields["queueOffset"]; got != tt.wantOffset {
				t.Errorf("answer queueOffset = %q, want %q", got, tt.wantOffset)
			}
			if id := resp.extFields["msgId"]; len(id) != 32 || id != last.MsgID {
				t.Errorf("answer msgId = %q, log %q; want the same 32 hex digits", id, last.MsgID)
			}
			if last.Topic != "T" || last.Group != "pg" {
				t.Errorf("log entry topic/group = %q/%q, want T/pg", last.Topic, last.Group)
			}
		})
	}
	first := b.Requests()[0]
	if first.UniqKey() != "u1" || len(first.Messages[0].Keys) != 2 || first.BodySize != 4 || first.QueueID != 1 {
		t.Errorf("first log entry = %+v, want uniq u1, 2 keys, body 4, queue 1", first)
	}
}

func TestOnewayIsNotAnswered(t *testing.T) {
	b := newTestBroker(t)
	rc := dialRaw(t, b.Addr())
	cmd := sendV1("T", "0", "", "x")
	cmd.flag = flagOneway
	rc.send(cmd)
	// The next answer on the connection is the heartbeat's.
	hb := rc.call(command{code: CodeHeartbeat, body: []byte(`{"clientID":"c","producerDataSet":[{"groupName":"g"}]}`)})
	if hb.code != CodeSuccess {
		t.Errorf("heartbeat answer code = %d, want %d", hb.code, CodeSuccess)
	}
	rs, err := b.Await(awaitCtx(t), settled(1))
	if err != nil {
		t.Fatalf("Await() error = %v", err)
	}
	if got := entry(t, rs, 1); got.Outcome != OutcomeOneway || got.QueueOffset != 0 {
		t.Errorf("one-way send logged %v offset %d, want oneway at offset 0", got.Outcome, got.QueueOffset)
	}
	if got := entry(t, rs, 2); got.ClientID != "c" || got.Group != "g" {
		t.Errorf("heartbeat logged client %q group %q, want c, g", got.ClientID, got.Group)
	}
}

func TestHeartbeatAndUnregister(t *testing.T) {
	b := newTestBroker(t)
	rc := dialRaw(t, b.Addr())
	if resp := rc.call(command{code: CodeHeartbeat, body: []byte("{")}); resp.code != CodeSystemError {
		t.Errorf("bad heartbeat answered %d, want %d", resp.code, CodeSystemError)
	}
	resp := rc.call(command{code: CodeUnregisterClient, extFields: map[string]string{"clientID": "c1", "producerGroup": "pg"}})
	if resp.code != CodeSuccess {
		t.Errorf("unregister answered %d, want %d", resp.code, CodeSuccess)
	}
	if got := b.Requests()[1]; got.ClientID != "c1" || got.Group != "pg" {
		t.Errorf("unregister logged client %q group %q, want c1, pg", got.ClientID, got.Group)
	}
}

func TestDelayOnManualClock(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	b := newTestBroker(t, WithClock(clk))
	if err := b.SetFault(Fault{Delay: time.Second}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	rc := dialRaw(t, b.Addr())
	opaque := rc.send(sendV1("T", "0", "", "x"))
	// Heartbeats are outside the fault's default scope: answered at once.
	if resp := rc.call(command{code: CodeHeartbeat, body: []byte(`{}`)}); resp.code != CodeSuccess {
		t.Fatalf("heartbeat answered %d, want %d", resp.code, CodeSuccess)
	}
	if got := entry(t, b.Requests(), 1); got.Outcome != OutcomePending {
		t.Fatalf("delayed send logged %v before the clk moved, want pending", got.Outcome)
	}
	// The send is logged, so its delay timer is set.
	if got := clk.Pending(); got != 1 {
		t.Fatalf("manual clk has %d timers, want the delay's 1", got)
	}
	clk.Advance(time.Second)
	resp, err := rc.recv()
	if err != nil || resp.opaque != opaque || resp.code != CodeSuccess {
		t.Fatalf("after the delay recv() = %+v, %v; want success for opaque %d", resp, err, opaque)
	}
	rs, err := b.Await(awaitCtx(t), settled(1))
	if err != nil {
		t.Fatalf("Await() error = %v", err)
	}
	got := entry(t, rs, 1)
	if want := time.Unix(1001, 0); !got.AnsweredAt.Equal(want) || !got.Time.Equal(time.Unix(1000, 0)) {
		t.Errorf("delayed send read at %v answered at %v, want %v and %v", got.Time, got.AnsweredAt, time.Unix(1000, 0), want)
	}
}

func TestDropAndCodeFaults(t *testing.T) {
	b := newTestBroker(t)
	rc := dialRaw(t, b.Addr())

	if err := b.SetFault(Fault{Drop: true}); err != nil {
		t.Fatalf("SetFault(drop) error = %v", err)
	}
	rc.send(sendV1("T", "0", "", "x"))
	if resp := rc.call(command{code: CodeHeartbeat, body: []byte(`{}`)}); resp.code != CodeSuccess {
		t.Fatalf("heartbeat answered %d, want %d", resp.code, CodeSuccess)
	}
	if got := entry(t, b.Requests(), 1); got.Outcome != OutcomeDropped {
		t.Errorf("dropped send logged %v, want dropped", got.Outcome)
	}

	if err := b.SetFault(Fault{Code: CodeSystemBusy}); err != nil {
		t.Fatalf("SetFault(code) error = %v", err)
	}
	resp := rc.call(sendV1("T", "0", "", "x"))
	if resp.code != CodeSystemBusy || !strings.Contains(resp.remark, "SYSTEM_BUSY") {
		t.Errorf("answer = %d %q, want %d with a remark naming SYSTEM_BUSY", resp.code, resp.remark, CodeSystemBusy)
	}
	if err := b.SetFault(Fault{Code: CodeTopicNotExist, Remark: "gone", Codes: []int16{CodeHeartbeat}}); err != nil {
		t.Fatalf("SetFault(heartbeat code) error = %v", err)
	}
	if resp := rc.call(command{code: CodeHeartbeat, body: []byte(`{}`)}); resp.code != CodeTopicNotExist || resp.remark != "gone" {
		t.Errorf("heartbeat answer = %d %q, want %d %q", resp.code, resp.remark, CodeTopicNotExist, "gone")
	}
	if resp := rc.call(sendV1("T", "0", "", "x")); resp.code != CodeSuccess || resp.extFields["queueOffset"] != "0" {
		t.Errorf("send outside the fault's codes = %d offset %q, want success at offset 0 (nothing stored before)",
			resp.code, resp.extFields["queueOffset"])
	}
	if got := b.Fault(); got.Code != CodeTopicNotExist || len(got.Codes) != 1 {
		t.Errorf("Fault() = %+v, want the one set", got)
	}
}

func TestFaultValidation(t *testing.T) {
	b := newTestBroker(t)
	for _, f := range []Fault{{Delay: -1}, {Drop: true, Delay: 1}, {Drop: true, Code: 2}, {Hung: true, Drop: true}, {Hung: true, Code: 2}, {LateStore: true}} {
		if err := b.SetFault(f); err == nil {
			t.Errorf("SetFault(%+v) error = nil, want one", f)
		}
	}
	tests := []struct {
		f    Fault
		want string
	}{
		{Fault{}, "none"}, {Fault{Drop: true}, "drop"}, {Fault{Delay: time.Second}, "delay 1s"},
		{Fault{Code: 2}, "answer SYSTEM_BUSY"}, {Fault{Code: 1, Delay: time.Millisecond}, "answer SYSTEM_ERROR after 1ms"},
		{Fault{Hung: true}, "hung"}, {Fault{Hung: true, LateStore: true}, "hung, late store"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.f, got, tt.want)
		}
	}
}

func TestRefuseAndResume(t *testing.T) {
	b := newTestBroker(t)
	rc := dialRaw(t, b.Addr())
	rc.call(command{code: CodeHeartbeat, body: []byte(`{}`)})

	if err := b.Refuse(); err != nil {
		t.Fatalf("Refuse() error = %v", err)
	}
	if !b.Refusing() {
		t.Errorf("Refusing() = false after Refuse")
	}
	if cmd, err := rc.recv(); err == nil {
		t.Errorf("open connection after Refuse read %+v, want it closed", cmd)
	}
	if c, err := net.Dial("tcp", b.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			_ = c.Close()
		}
		t.Fatalf("Dial() while refusing error = %v, want ECONNREFUSED", err)
	}
	if err := b.Resume(); err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	if err := b.Resume(); err != nil {
		t.Fatalf("second Resume() error = %v, want nil", err)
	}
	rc2 := dialRaw(t, b.Addr())
	if resp := rc2.call(command{code: CodeHeartbeat, body: []byte(`{}`)}); resp.code != CodeSuccess {
		t.Errorf("heartbeat after Resume answered %d, want %d", resp.code, CodeSuccess)
	}
}

func TestCloseAbandonsDelayedAnswersAndIsIdempotent(t *testing.T) {
	b, err := NewBroker("b", WithLogger(quietLogger))
	if err != nil {
		t.Fatalf("NewBroker() error = %v", err)
	}
	if err := b.SetFault(Fault{Delay: time.Hour}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	rc := dialRaw(t, b.Addr())
	rc.send(sendV1("T", "0", "", "x"))
	if _, err := b.Await(awaitCtx(t), func(rs []Request) bool { return len(rs) == 1 }); err != nil {
		t.Fatalf("Await() error = %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close() error = %v", err)
	}
	if got := b.Requests()[0]; got.Outcome != OutcomeAbandoned {
		t.Errorf("delayed send after Close logged %v, want abandoned", got.Outcome)
	}
	if _, err := b.Await(context.Background(), func(rs []Request) bool { return len(rs) > 1 }); !errors.Is(err, ErrClosed) {
		t.Errorf("Await() on a closed broker error = %v, want ErrClosed", err)
	}
	if err := b.Refuse(); !errors.Is(err, ErrClosed) {
		t.Errorf("Refuse() on a closed broker error = %v, want ErrClosed", err)
	}
	if err := b.Resume(); !errors.Is(err, ErrClosed) {
		t.Errorf("Resume() on a closed broker error = %v, want ErrClosed", err)
	}
}

func TestNameServerRoutes(t *testing.T) {
	ns := newTestNameServer(t)
	b := newTestBroker(t)
	rc := dialRaw(t, ns.Addr())
	lookup := func(topic string) *command {
		return rc.call(command{code: CodeGetRouteInfoByTopic, extFields: map[string]string{"topic": topic}})
	}
	resp := lookup("T")
	if resp.code != CodeTopicNotExist || !strings.Contains(resp.remark, "T") {
		t.Errorf("unknown topic answered %d %q, want %d naming the topic", resp.code, resp.remark, CodeTopicNotExist)
	}
	if err := ns.SetRoute("T", RouteOf(4, b)); err != nil {
		t.Fatalf("SetRoute() error = %v", err)
	}
	resp = lookup("T")
	if resp.code != CodeSuccess || !strings.Contains(string(resp.body), `{0:"`+b.Addr()+`"}`) {
		t.Errorf("route answer = %d %s, want success with the broker's master address", resp.code, resp.body)
	}
	r, ok := ns.Route("T")
	if !ok || len(r.Queues) != 1 || r.Queues[0].WriteQueueNums != 4 || r.Brokers[0].Addrs[MasterID] != b.Addr() {
		t.Errorf("Route() = %+v, %v; want the route set", r, ok)
	}
	r.Brokers[0].Addrs[MasterID] = "changed"
	if r2, _ := ns.Route("T"); r2.Brokers[0].Addrs[MasterID] != b.Addr() {
		t.Errorf("changing Route()'s result changed the name server's route")
	}
	ns.DeleteRoute("T")
	if resp := lookup("T"); resp.code != CodeTopicNotExist {
		t.Errorf("deleted topic answered %d, want %d", resp.code, CodeTopicNotExist)
	}
	rs := ns.Requests()
	if len(rs) != 3 || rs[0].Topic != "T" || rs[0].ResponseCode != CodeTopicNotExist || rs[1].ResponseCode != CodeSuccess {
		t.Errorf("name server log = %v, want 3 lookups of T", rs)
	}
	ns.ResetLog()
	lookup("T")
	if rs := ns.Requests(); len(rs) != 1 || rs[0].Seq != 4 {
		t.Errorf("log after ResetLog = %v, want one entry numbered 4", rs)
	}

	bad := []struct {
		topic string
		r     Route
	}{
		{"", Route{}},
		{"T", Route{Queues: []QueueData{{}}}},
		{"T", Route{Queues: []QueueData{{BrokerName: "b", WriteQueueNums: -1}}}},
		{"T", Route{Brokers: []BrokerData{{BrokerName: "b"}}}},
		{"T", Route{Brokers: []BrokerData{{Addrs: map[int64]string{0: "a"}}}}},
	}
	for _, tt := range bad {
		if err := ns.SetRoute(tt.topic, tt.r); err == nil {
			t.Errorf("SetRoute(%q, %+v) error = nil, want one", tt.topic, tt.r)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, o := range []Option{WithClock(nil), WithLogger(nil), WithMaxFrameSize(4), WithCluster("")} {
		if _, err := NewNameServer(o); err == nil {
			t.Errorf("NewNameServer(bad option) error = nil, want one")
		}
	}
	if _, err := NewBroker(""); err == nil {
		t.Errorf("NewBroker(\"\") error = nil, want one")
	}
}
