package remotingtest

import (
	"errors"
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
	// Hung reads every request, of any code (Codes is ignored), and
	// answers none while the fault is in force, as a broker whose JVM is
	// stopped (SIGSTOP) does: the kernel still accepts connections, and
	// requests, heartbeats and probes alike time out at the client.
	Hung bool
	// LateStore, with Hung, keeps the requests read while hung and handles
	// them when the hang ends (the next SetFault), as a stopped broker does
	// when it resumes (SIGCONT): sends are stored then, though their
	// clients gave up long before and may have stored the message
	// elsewhere, and their answers are written to connections still open.
	// Without LateStore, requests read while hung are never handled.
	LateStore bool
	// Codes are the request codes the fault applies to; empty means the
	// send-message codes (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE),
	// so heartbeats keep working unless listed.
	Codes []int16
}

func (f Fault) appliesTo(code int16) bool {
	if f.Hung {
		return true
	}
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
	if f.Hung && (f.Drop || f.Delay != 0 || f.Code != 0) {
		return fmt.Errorf("remotingtest: Fault{Hung: true} with Drop %v, Delay %v or Code %d: a hung broker answers nothing", f.Drop, f.Delay, f.Code)
	}
	if f.LateStore && !f.Hung {
		return errors.New("remotingtest: Fault{LateStore: true} without Hung: late store is what a hung broker does when it resumes")
	}
	if f.Drop && (f.Delay != 0 || f.Code != 0) {
		return fmt.Errorf("remotingtest: Fault{Drop: true} with Delay %v or Code %d: a dropped request is never answered", f.Delay, f.Code)
	}
	return nil
}

// String describes the fault for test messages.
func (f Fault) String() string {
	switch {
	case f.Hung && f.LateStore:
		return "hung, late store"
	case f.Hung:
		return "hung"
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
