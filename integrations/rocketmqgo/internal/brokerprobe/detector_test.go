package brokerprobe

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/probe/probetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func broker(t testing.TB) *remotingtest.Broker {
	t.Helper()
	b, err := remotingtest.NewBroker("broker-a", remotingtest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("NewBroker() error = %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func hungBroker(t testing.TB) *remotingtest.Broker {
	t.Helper()
	b := broker(t)
	if err := b.SetFault(remotingtest.Fault{Hung: true}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	return b
}

// TestConformance runs probe/probetest on the detector: a live broker
// is reachable, a closed port unreachable, a port that accepts and stays
// mute and a hung broker time out.
func TestConformance(t *testing.T) {
	probetest.Run(t, &Detector{}, probetest.Endpoints{
		Reachable:   []string{broker(t).Addr()},
		Unreachable: []string{probetest.ClosedTCP(t), probetest.ListenTCP(t), hungBroker(t).Addr()},
		Silent:      []string{probetest.SilentTCP(t), hungBroker(t).Addr()},
		Timeout:     time.Second,
	})
}

// TestRequestOnTheWire: the broker reads GET_MAX_OFFSET for the configured
// topic and queue (TBW102, queue 0 by default), once per probe.
func TestRequestOnTheWire(t *testing.T) {
	b := broker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := (&Detector{}).Detect(ctx, b.Addr()); err != nil {
		t.Fatalf("Detect() = %v, want nil", err)
	}
	if err := (&Detector{Topic: "orders", QueueID: 3}).Detect(ctx, b.Addr()); err != nil {
		t.Fatalf("Detect() = %v, want nil", err)
	}
	rs := b.Requests()
	if len(rs) != 2 {
		t.Fatalf("broker read %d requests, want 2: %v", len(rs), rs)
	}
	for i, want := range []struct {
		topic string
		queue int
	}{{"TBW102", 0}, {"orders", 3}} {
		if r := rs[i]; r.Code != remotingtest.CodeGetMaxOffset || r.Topic != want.topic || r.QueueID != want.queue ||
			r.Outcome != remotingtest.OutcomeAnswered || r.ResponseCode != remotingtest.CodeSuccess {
			t.Errorf("request %d = %v, want GET_MAX_OFFSET %s queue %d answered SUCCESS", i, r, want.topic, want.queue)
		}
	}
}

// TestRequestFrame decodes the request frame as a broker would.
func TestRequestFrame(t *testing.T) {
	frame := appendRequest(nil, 7, `we"ird`, 2, "broker-a")
	if got := int(binary.BigEndian.Uint32(frame)); got != len(frame)-4 {
		t.Fatalf("length prefix %d, frame has %d bytes after it", got, len(frame)-4)
	}
	mark := binary.BigEndian.Uint32(frame[4:])
	if mark>>24 != 0 || int(mark&0xFFFFFF) != len(frame)-8 {
		t.Fatalf("header mark %#x, want JSON and header length %d", mark, len(frame)-8)
	}
	var h header
	if err := json.Unmarshal(frame[8:], &h); err != nil {
		t.Fatalf("header is not JSON: %v", err)
	}
	want := map[string]string{"topic": `we"ird`, "queueId": "2", "bname": "broker-a"}
	if h.Code != 30 || h.Opaque != 7 || h.Flag != 0 || h.Language != "GO" || len(h.ExtFields) != 3 {
		t.Fatalf("header = %+v", h)
	}
	for k, v := range want {
		if h.ExtFields[k] != v {
			t.Errorf("extFields[%q] = %q, want %q", k, h.ExtFields[k], v)
		}
	}
}

// answerWith serves one connection per probe: it reads the request and
// writes reply(opaque) (then closes, unless hold).
func answerWith(t *testing.T, reply func(opaque int32) []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var prefix [4]byte
			if _, err := io.ReadFull(c, prefix[:]); err == nil {
				frame := make([]byte, binary.BigEndian.Uint32(prefix[:]))
				if _, err := io.ReadFull(c, frame); err == nil {
					var h header
					_ = json.Unmarshal(frame[4:], &h)
					_, _ = c.Write(reply(h.Opaque))
				}
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	return l.Addr().String()
}

func jsonFrame(h header, body []byte) []byte {
	raw, _ := json.Marshal(h)
	return rawFrame(0, raw, body)
}

func rawFrame(serialize byte, hdr, body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(4+len(hdr)+len(body)))
	out = binary.BigEndian.AppendUint32(out, uint32(serialize)<<24|uint32(len(hdr)))
	return append(append(out, hdr...), body...)
}

func binaryHeader(code int16, opaque, flag int32, remark string, ext map[string]string) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, uint16(code))
	b = append(b, 0)
	b = binary.BigEndian.AppendUint16(b, 453)
	b = binary.BigEndian.AppendUint32(b, uint32(opaque))
	b = binary.BigEndian.AppendUint32(b, uint32(flag))
	b = binary.BigEndian.AppendUint32(b, uint32(len(remark)))
	b = append(b, remark...)
	var e []byte
	for k, v := range ext {
		e = binary.BigEndian.AppendUint16(e, uint16(len(k)))
		e = append(e, k...)
		e = binary.BigEndian.AppendUint32(e, uint32(len(v)))
		e = append(e, v...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
	return append(b, e...)
}

func ok(opaque int32) header {
	return header{Code: 0, Opaque: opaque, Flag: 1, ExtFields: map[string]string{"offset": "42"}}
}

// TestAnswers: each kind of answer gets its verdict, and every unreachable
// error says what was wrong.
func TestAnswers(t *testing.T) {
	tests := []struct {
		name      string
		reply     func(int32) []byte
		malformed bool   // wraps ErrMalformed
		want      string // in the error; "" = reachable
	}{
		{"JSON success", func(o int32) []byte { return jsonFrame(ok(o), nil) }, false, ""},
		{"binary success", func(o int32) []byte {
			return rawFrame(1, binaryHeader(0, o, 1, "", map[string]string{"offset": "0"}), nil)
		}, false, ""},
		{"success with a body", func(o int32) []byte { return jsonFrame(ok(o), []byte("body")) }, false, ""},
		{"negative length", func(int32) []byte { return []byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0} }, true, "frame length -16 (bytes ff ff ff f0) outside [4, 65536]"},
		{"huge length", func(int32) []byte { return []byte{0x7f, 0xff, 0xff, 0xff} }, true, "frame length 2147483647"},
		{"length below 4", func(int32) []byte { return []byte{0, 0, 0, 2, 0, 0} }, true, "frame length 2"},
		{"header longer than frame", func(int32) []byte { return []byte{0, 0, 0, 4, 0, 0, 0, 9} }, true, "header length 9 exceeds the 0 bytes"},
		{"unknown serialization", func(int32) []byte { return rawFrame(7, []byte("{}"), nil) }, true, "unknown serialization type 7"},
		{"bad JSON", func(int32) []byte { return rawFrame(0, []byte("{nope"), nil) }, true, "JSON header"},
		{"cut binary header", func(int32) []byte { return rawFrame(1, []byte{0, 0, 0}, nil) }, true, "binary header wants"},
		{"binary ext too long", func(o int32) []byte {
			h := binaryHeader(0, o, 1, "", nil)
			binary.BigEndian.PutUint32(h[len(h)-4:], 1000)
			return rawFrame(1, h, nil)
		}, true, "binary header wants 1000 bytes"},
		{"request, not response", func(o int32) []byte { h := ok(o); h.Flag = 0; return jsonFrame(h, nil) }, true, "got a request"},
		{"foreign opaque", func(o int32) []byte { return jsonFrame(ok(o+1), nil) }, true, "answer carries opaque"},
		{"no offset", func(o int32) []byte { h := ok(o); h.ExtFields = nil; return jsonFrame(h, nil) }, true, "no offset field"},
		{"offset not a number", func(o int32) []byte {
			h := ok(o)
			h.ExtFields["offset"] = "x"
			return jsonFrame(h, nil)
		}, true, `offset "x" is not an integer`},
		{"error code", func(o int32) []byte {
			return jsonFrame(header{Code: 15, Opaque: o, Flag: 1, Remark: "Request doesn't have field bname"}, nil)
		}, false, `code 15 ("Request doesn't have field bname")`},
		{"closed at once", func(int32) []byte { return nil }, false, "connection closed before the answer"},
		{"cut frame", func(o int32) []byte { f := jsonFrame(ok(o), nil); return f[:len(f)-3] }, false, "connection closed before the answer inside a"},
		{"cut prefix", func(int32) []byte { return []byte{0, 0} }, false, "after 2 bytes of the length prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := answerWith(t, tt.reply)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := (&Detector{}).Detect(ctx, addr)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Detect() = %v, want nil", err)
				}
				return
			}
			var pe *probe.Error
			if !errors.As(err, &pe) || errors.Is(err, probe.ErrInconclusive) {
				t.Fatalf("Detect() = %v, want an unreachable *probe.Error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Detect() = %v, want it to say %q", err, tt.want)
			}
			if got := errors.Is(err, ErrMalformed); got != tt.malformed {
				t.Errorf("errors.Is(err, ErrMalformed) = %v, want %v", got, tt.malformed)
			}
		})
	}
}

// TestAnswerError: a non-SUCCESS answer is an *AnswerError with its code.
func TestAnswerError(t *testing.T) {
	addr := answerWith(t, func(o int32) []byte { return jsonFrame(header{Code: 2, Opaque: o, Flag: 1, Remark: "busy"}, nil) })
	err := (&Detector{}).Detect(context.Background(), addr)
	var ae *AnswerError
	if !errors.As(err, &ae) || ae.Code != 2 || ae.Remark != "busy" {
		t.Fatalf("Detect() = %v, want an *AnswerError code 2 remark busy", err)
	}
}

// TestDeadlineIsUnreachable: a mute peer is unreachable at the deadline,
// with an error naming it; a cancelled probe is inconclusive.
func TestDeadlineIsUnreachable(t *testing.T) {
	addr := hungBroker(t).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := (&Detector{}).Detect(ctx, addr)
	if err == nil || errors.Is(err, probe.ErrInconclusive) || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "no answer within the probe's deadline") {
		t.Fatalf("Detect(hung) = %v, want unreachable: no answer within the deadline", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, ccancel)
	if err := (&Detector{}).Detect(cctx, addr); !errors.Is(err, probe.ErrInconclusive) {
		t.Fatalf("Detect(hung) cancelled = %v, want inconclusive", err)
	}
}

// TestManualClockDeadline: a ctx done on another clock (the strategy's
// manual clock) ends the probe though its wall-clock deadline is far off.
func TestManualClockDeadline(t *testing.T) {
	addr := hungBroker(t).Addr()
	clk := clock.NewManual(time.Unix(0, 0))
	ctx, cancel := clock.WithTimeout(context.Background(), clk, time.Hour)
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- (&Detector{}).Detect(ctx, addr) }()
	time.Sleep(20 * time.Millisecond)
	clk.Advance(time.Hour)
	select {
	case err := <-res:
		if err == nil || errors.Is(err, probe.ErrInconclusive) {
			t.Fatalf("Detect() = %v, want unreachable", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Detect() did not return once its clock deadline passed")
	}
}

// TestMaxFrameSize: a larger announced frame is refused before it is read.
func TestMaxFrameSize(t *testing.T) {
	addr := answerWith(t, func(o int32) []byte { return jsonFrame(ok(o), bytes.Repeat([]byte("x"), 300)) })
	if err := (&Detector{MaxFrameSize: 128}).Detect(context.Background(), addr); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Detect() = %v, want a frame-length error", err)
	}
	if err := (&Detector{}).Detect(context.Background(), addr); err != nil {
		t.Fatalf("Detect() with the default limit = %v, want nil", err)
	}
}

// FuzzAnswer feeds any bytes to the answer reader: it never panics, and
// accepts only what checkAnswer calls a SUCCESS answer to opaque 1.
func FuzzAnswer(f *testing.F) {
	f.Add(jsonFrame(ok(1), nil))
	f.Add(rawFrame(1, binaryHeader(0, 1, 1, "r", map[string]string{"offset": "9"}), []byte("b")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0})
	f.Add(rawFrame(1, []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		var scratch [256]byte
		h, err := readFrame(bytes.NewReader(in), 4096, scratch[:])
		if err != nil {
			if h != nil {
				t.Fatal("header with an error")
			}
			return
		}
		if _, err := checkAnswer(h, 1); err == nil && (h.Flag&1 == 0 || h.Opaque != 1 || h.Code != 0) {
			t.Fatalf("accepted %+v", h)
		}
	})
}

// BenchmarkDetect is the cost of one probe of a live loopback broker
// (dial, request, answer, close), beside probe.TCPDetector's connect.
func BenchmarkDetect(b *testing.B) {
	addr := broker(b).Addr()
	ctx := context.Background()
	b.Run("RemotingDetector", func(b *testing.B) {
		d := &Detector{}
		b.ReportAllocs()
		for b.Loop() {
			if err := d.Detect(ctx, addr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("TCPDetector", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := (probe.TCPDetector{}).Detect(ctx, addr); err != nil {
				b.Fatal(err)
			}
		}
	})
}
