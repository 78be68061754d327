package remotingtest

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestGetMaxOffset: GET_MAX_OFFSET answers the queue's next offset, 0 for a
// queue never stored to (no topic check, as a broker), SYSTEM_ERROR for a
// queue id that is not an integer.
func TestGetMaxOffset(t *testing.T) {
	b := newTestBroker(t)
	rc := dialRaw(t, b.Addr())
	maxOffset := func(topic, queue string) *command {
		return rc.call(command{code: CodeGetMaxOffset, extFields: map[string]string{"topic": topic, "queueId": queue}})
	}
	if resp := maxOffset("T", "0"); resp.code != CodeSuccess || resp.extFields["offset"] != "0" {
		t.Fatalf("GET_MAX_OFFSET before any send = %d %v, want SUCCESS offset 0", resp.code, resp.extFields)
	}
	for range 3 {
		if resp := rc.call(sendV1("T", "2", "", "x")); resp.code != CodeSuccess {
			t.Fatalf("send answered %d", resp.code)
		}
	}
	if resp := maxOffset("T", "2"); resp.code != CodeSuccess || resp.extFields["offset"] != "3" {
		t.Errorf("GET_MAX_OFFSET after 3 sends = %d %v, want offset 3", resp.code, resp.extFields)
	}
	if resp := maxOffset("TBW102", "0"); resp.code != CodeSuccess || resp.extFields["offset"] != "0" {
		t.Errorf("GET_MAX_OFFSET of an unknown topic = %d %v, want SUCCESS offset 0", resp.code, resp.extFields)
	}
	if resp := maxOffset("T", "x"); resp.code != CodeSystemError {
		t.Errorf("GET_MAX_OFFSET with queueId x = %d, want SYSTEM_ERROR", resp.code)
	}
	rs := b.Requests()
	if r := rs[0]; r.Code != CodeGetMaxOffset || r.Topic != "T" || r.QueueID != 0 || r.Outcome != OutcomeAnswered {
		t.Errorf("log entry = %v, want GET_MAX_OFFSET of T queue 0, answered", r)
	}
}

// TestHungAnswersNothing: a hung broker accepts connections and reads every
// request (sends, heartbeats, GET_MAX_OFFSET) without answering, logs them
// dropped and hung, and answers again once healed.
func TestHungAnswersNothing(t *testing.T) {
	b := newTestBroker(t)
	if err := b.SetFault(Fault{Hung: true, Codes: []int16{CodeSendMessage}}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	rc := dialRaw(t, b.Addr()) // accepted while hung
	rc.send(sendV1("T", "0", "", "x"))
	rc.send(command{code: CodeHeartbeat, body: []byte(`{}`)})
	rc.send(command{code: CodeGetMaxOffset, extFields: map[string]string{"topic": "T", "queueId": "0"}})
	if _, err := b.Await(awaitCtx(t), func(rs []Request) bool { return len(rs) == 3 }); err != nil {
		t.Fatalf("Await() error = %v", err)
	}
	_ = rc.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := readCommand(rc.r, DefaultMaxFrameSize); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read from a hung broker = %v, want a read timeout (no answer)", err)
	}
	for _, r := range b.Requests() {
		if !r.Hung || r.Outcome != OutcomeDropped {
			t.Errorf("entry %v: hung=%v, want hung and dropped", r, r.Hung)
		}
	}
	if err := b.SetFault(Fault{}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	if resp := rc.call(command{code: CodeHeartbeat, body: []byte(`{}`)}); resp.code != CodeSuccess {
		t.Errorf("heartbeat after the hang = %d, want SUCCESS", resp.code)
	}
	if got := len(b.Requests()); got != 4 {
		t.Errorf("log has %d entries, want 4 (nothing handled late without LateStore)", got)
	}
}

// TestLateStore: requests read while hung with LateStore are handled, in
// order, when the hang ends: sends are stored then and answered late, even
// to a client that closed its connection (stored, answer abandoned).
func TestLateStore(t *testing.T) {
	b := newTestBroker(t)
	if err := b.SetFault(Fault{Hung: true, LateStore: true}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	gone := dialRaw(t, b.Addr())
	gone.send(sendV1("T", "0", "", "x"))
	if _, err := b.Await(awaitCtx(t), func(rs []Request) bool { return len(rs) == 1 }); err != nil {
		t.Fatalf("Await() error = %v", err)
	}
	stay := dialRaw(t, b.Addr())
	stay.send(sendV1("T", "0", "", "y"))
	if _, err := b.Await(awaitCtx(t), func(rs []Request) bool { return len(rs) == 2 }); err != nil {
		t.Fatalf("Await() error = %v", err)
	}
	for _, r := range b.Requests() {
		if !r.Hung || r.Outcome != OutcomePending {
			t.Fatalf("entry %v while hung: want hung and pending", r)
		}
	}
	_ = gone.conn.Close()
	// Wait until the server has seen the close, so the late answer's write
	// fails for certain.
	for deadline := time.Now().Add(hangGuard); b.srv.connCount() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("server still holds %d connections", b.srv.connCount())
		}
	}
	if err := b.SetFault(Fault{}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	resp, err := stay.recv()
	if err != nil || resp.code != CodeSuccess {
		t.Fatalf("late answer = %v, %v, want SUCCESS", resp, err)
	}
	rs, err := b.Await(awaitCtx(t), func(rs []Request) bool {
		return rs[0].Outcome != OutcomePending && rs[1].Outcome != OutcomePending
	})
	if err != nil {
		t.Fatalf("Await() error = %v", err)
	}
	if rs[0].QueueOffset != 0 || rs[1].QueueOffset != 1 {
		t.Errorf("late stores at offsets %d, %d, want 0, 1 (stored in the order read)", rs[0].QueueOffset, rs[1].QueueOffset)
	}
	if rs[0].Outcome != OutcomeAbandoned || rs[1].Outcome != OutcomeAnswered {
		t.Errorf("outcomes %v, %v, want abandoned (client gone, stored all the same), answered", rs[0].Outcome, rs[1].Outcome)
	}
}

// TestCloseWhileHung: Close returns with requests held, settling them
// abandoned and unstored.
func TestCloseWhileHung(t *testing.T) {
	b := newTestBroker(t)
	if err := b.SetFault(Fault{Hung: true, LateStore: true}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	rc := dialRaw(t, b.Addr())
	rc.send(sendV1("T", "0", "", "x"))
	if _, err := b.Await(awaitCtx(t), func(rs []Request) bool { return len(rs) == 1 }); err != nil {
		t.Fatalf("Await() error = %v", err)
	}
	_ = b.Close()
	if r := b.Requests()[0]; r.Outcome != OutcomeAbandoned || r.QueueOffset != -1 {
		t.Errorf("held request after Close = %v, want abandoned, unstored", r)
	}
	if _, err := net.DialTimeout("tcp", b.Addr(), time.Second); err == nil {
		t.Errorf("dial after Close succeeded")
	}
}
