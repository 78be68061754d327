package protocol

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"

	"github.com/mqfault/mqfault/pkg/probe"
	pluginv1 "github.com/mqfault/mqfault/plugins/proto/mqfault/plugin/v1"
)

var (
	// ErrInvalidEndpoint is what a detector returns (or wraps) when the
	// endpoint is not an address it can probe. It crosses the wire as
	// CODE_INVALID_ENDPOINT; a *net.AddrError is sent with that code too.
	ErrInvalidEndpoint = errors.New("plugin: invalid endpoint")
	// ErrNotServing is what a detector returns (or wraps) when the endpoint
	// answered that it is not serving (CODE_NOT_SERVING).
	ErrNotServing = errors.New("plugin: endpoint not serving")
	// ErrPluginFailed is what the plugin side reports when the plugin's own
	// code failed, for instance panicked (CODE_INTERNAL).
	ErrPluginFailed = errors.New("plugin: plugin failed")
	// ErrInvalidArgument is what the plugin side reports when a request is
	// malformed (CODE_INVALID_ARGUMENT).
	ErrInvalidArgument = errors.New("plugin: invalid argument")
	// ErrBadAnswer is what every answer that breaks the protocol matches on
	// the host: an unknown verdict or code, a wrong number of verdicts, an
	// RPC the plugin does not implement, a raw gRPC error.
	ErrBadAnswer = errors.New("plugin: answer breaks the plugin protocol")
	// ErrUnavailable is what a call matches when the plugin process cannot be
	// reached: it died, is restarting, or was closed.
	ErrUnavailable = errors.New("plugin: plugin unavailable")
)

// codeTable lists, in the order CodeOf tries them, the codes that stand for a
// Go sentinel. CODE_UNSPECIFIED (no error) and CODE_UNKNOWN (no sentinel)
// are not in it.
var codeTable = []struct {
	code pluginv1.Code
	err  error
}{
	{pluginv1.Code_CODE_CANCELED, context.Canceled},
	{pluginv1.Code_CODE_DEADLINE_EXCEEDED, context.DeadlineExceeded},
	{pluginv1.Code_CODE_CONNECTION_REFUSED, syscall.ECONNREFUSED},
	{pluginv1.Code_CODE_INVALID_ENDPOINT, ErrInvalidEndpoint},
	{pluginv1.Code_CODE_NOT_SERVING, ErrNotServing},
	{pluginv1.Code_CODE_INTERNAL, ErrPluginFailed},
	{pluginv1.Code_CODE_INVALID_ARGUMENT, ErrInvalidArgument},
	{pluginv1.Code_CODE_INCONCLUSIVE, probe.ErrInconclusive},
}

// CodeOf returns the wire code for err: CODE_UNSPECIFIED for nil, the code
// of the first sentinel of the code table err matches (context.Canceled,
// context.DeadlineExceeded or os.ErrDeadlineExceeded, syscall.ECONNREFUSED,
// ErrInvalidEndpoint or a *net.AddrError, ErrNotServing, ErrPluginFailed,
// ErrInvalidArgument, probe.ErrInconclusive), else CODE_UNKNOWN.
func CodeOf(err error) pluginv1.Code {
	if err == nil {
		return pluginv1.Code_CODE_UNSPECIFIED
	}
	for _, c := range codeTable {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	var addrErr *net.AddrError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return pluginv1.Code_CODE_DEADLINE_EXCEEDED
	case errors.As(err, &addrErr):
		return pluginv1.Code_CODE_INVALID_ENDPOINT
	}
	return pluginv1.Code_CODE_UNKNOWN
}

// SentinelOf returns the Go sentinel a wire code stands for, or nil for
// CODE_UNSPECIFIED, CODE_UNKNOWN and codes this version does not know.
func SentinelOf(c pluginv1.Code) error {
	for _, e := range codeTable {
		if e.code == c {
			return e.err
		}
	}
	return nil
}

// knownCode reports whether c is a code of this protocol version.
func knownCode(c pluginv1.Code) bool {
	_, ok := pluginv1.Code_name[int32(c)]
	return ok
}

// RemoteError is an error a plugin reported, rebuilt on the host from its
// code and reason. It matches (errors.Is) the sentinel of its code, and
// probe.ErrInconclusive when the plugin said the probe told nothing.
type RemoteError struct {
	// Code is the wire code the plugin sent.
	Code pluginv1.Code
	// Reason is the plugin's text (an error message).
	Reason string
	// Inconclusive is true when the plugin answered "inconclusive".
	Inconclusive bool
}

// Error returns the plugin's reason, or the code's name when it gave none.
func (e *RemoteError) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	return e.Code.String()
}

// Is reports whether target is the sentinel of e's code (a deadline also
// matches os.ErrDeadlineExceeded), or probe.ErrInconclusive for an
// inconclusive answer.
func (e *RemoteError) Is(target error) bool {
	if e.Inconclusive && target == probe.ErrInconclusive {
		return true
	}
	if e.Code == pluginv1.Code_CODE_DEADLINE_EXCEEDED && target == os.ErrDeadlineExceeded {
		return true
	}
	s := SentinelOf(e.Code)
	return s != nil && s == target
}

// BadAnswerError says how a plugin's answer broke the protocol. It matches
// ErrBadAnswer.
type BadAnswerError struct {
	// RPC is the call, e.g. "Detect".
	RPC string
	// Problem says what was wrong.
	Problem string
}

func (e *BadAnswerError) Error() string {
	return "plugin: bad answer to " + e.RPC + ": " + e.Problem
}

// Is makes errors.Is(err, ErrBadAnswer) true.
func (e *BadAnswerError) Is(target error) bool { return target == ErrBadAnswer }

// Inconclusive wraps err so that it also matches probe.ErrInconclusive;
// its text is err's. A nil err stays nil.
func Inconclusive(err error) error {
	if err == nil || errors.Is(err, probe.ErrInconclusive) {
		return err
	}
	return &inconclusiveError{err}
}

type inconclusiveError struct{ err error }

func (e *inconclusiveError) Error() string { return e.err.Error() }
func (e *inconclusiveError) Unwrap() error { return e.err }
func (e *inconclusiveError) Is(target error) bool {
	return target == probe.ErrInconclusive
}
