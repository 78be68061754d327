package remotingtest

import (
	"fmt"
	"slices"
	"time"
)

// Fault is how a broker misbehaves, set with Broker.SetFault and in force
// for every request read afterwards until the next SetFault. The zero Fault
// is a healthy broker. Refused connections are separate: Broker.Refuse.
type Fault struct {
	// Delay holds each answer back this long (on the server's clock).
	Delay time.Duration
	// Drop reads requests and never answers them; the client times out.
	Drop bool
	// Code, when not 0 (SUCCESS), is answered instead of the normal answer,
	// after Delay, with nothing stored; but FLUSH_DISK_TIMEOUT,
	// SLAVE_NOT_AVAILABLE and FLUSH_SLAVE_TIMEOUT answer a send that was
	// stored, with its offsets, as a broker does. The Go client turns the
	// other codes into the error "CODE: n, DESC: remark" and those three
	// into a SendResult with that status.
	Code int16
	// Remark is answered with Code; empty means a remark naming the broker
	// and the code.
	Remark string
	// Codes are the request codes the fault applies to; empty means the
	// send-message codes (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE),
	// so heartbeats keep working unless listed.
	Codes []int16
}

func (f Fault) appliesTo(code int16) bool {
	if len(f.Codes) == 0 {
		return isSend(code)
	}
	return slices.Contains(f.Codes, code)
}

// validate reports a fault that cannot be applied.
func (f Fault) validate() error {
	if f.Delay < 0 {
		return fmt.Errorf("remotingtest: Fault.Delay = %v: negative", f.Delay)
	}
	if f.Drop && (f.Delay != 0 || f.Code != 0) {
		return fmt.Errorf("remotingtest: Fault{Drop: true} with Delay %v or Code %d: a dropped request is never answered", f.Delay, f.Code)
	}
	return nil
}

// String describes the fault for test messages.
func (f Fault) String() string {
	switch {
	case f.Drop:
		return "drop"
	case f.Code != 0 && f.Delay > 0:
		return fmt.Sprintf("answer %s after %v", ResponseName(f.Code), f.Delay)
	case f.Code != 0:
		return "answer " + ResponseName(f.Code)
	case f.Delay > 0:
		return fmt.Sprintf("delay %v", f.Delay)
	}
	return "none"
}
