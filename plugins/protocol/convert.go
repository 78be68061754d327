package protocol

import (
	"errors"
	"fmt"
	"math"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
	pluginv1 "github.com/mqfault/mqfault/plugins/proto/mqfault/plugin/v1"
)

// maxReason bounds the reason text kept from a plugin's answer, so a plugin
// cannot flood the host's logs through its error messages.
const maxReason = 1024

func clipReason(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return s[:maxReason] + "…"
}

// detectResponse is a ServiceDetector's answer on the wire: nil is reachable;
// an error matching probe.ErrInconclusive, context.Canceled or
// ErrPluginFailed is inconclusive; any other error is unreachable.
func detectResponse(err error) *pluginv1.DetectResponse {
	if err == nil {
		return &pluginv1.DetectResponse{Verdict: pluginv1.Verdict_VERDICT_REACHABLE}
	}
	code := CodeOf(err)
	v := pluginv1.Verdict_VERDICT_UNREACHABLE
	if errors.Is(err, probe.ErrInconclusive) || code == pluginv1.Code_CODE_CANCELED || code == pluginv1.Code_CODE_INTERNAL {
		v = pluginv1.Verdict_VERDICT_INCONCLUSIVE
	}
	reason := err
	var pe *probe.Error
	if errors.As(err, &pe) && pe.Err != nil {
		reason = pe.Err // the host names the endpoint itself
	}
	return &pluginv1.DetectResponse{Verdict: v, Code: code, Reason: clipReason(reason.Error())}
}

// detectError turns a plugin's answer back into a ServiceDetector's answer:
// nil, a *probe.Error wrapping a *RemoteError (unreachable), or a
// *RemoteError matching probe.ErrInconclusive. An answer that breaks
// the protocol gives a *BadAnswerError that also matches
// probe.ErrInconclusive (it tells nothing about the endpoint).
func detectError(endpoint string, r *pluginv1.DetectResponse) error {
	bad := func(format string, args ...any) error {
		return Inconclusive(&BadAnswerError{RPC: "Detect", Problem: fmt.Sprintf(format, args...)})
	}
	if r == nil {
		return bad("no answer")
	}
	code := r.GetCode()
	if !knownCode(code) {
		return bad("unknown code %d", int32(code))
	}
	reason := clipReason(r.GetReason())
	switch r.GetVerdict() {
	case pluginv1.Verdict_VERDICT_REACHABLE:
		if code != pluginv1.Code_CODE_UNSPECIFIED {
			return bad("verdict reachable with error code %s", code)
		}
		return nil
	case pluginv1.Verdict_VERDICT_UNREACHABLE:
		if code == pluginv1.Code_CODE_UNSPECIFIED || code == pluginv1.Code_CODE_INCONCLUSIVE {
			return bad("verdict unreachable with code %s", code)
		}
		return &probe.Error{Endpoint: endpoint, Err: &RemoteError{Code: code, Reason: reason}}
	case pluginv1.Verdict_VERDICT_INCONCLUSIVE:
		if code == pluginv1.Code_CODE_UNSPECIFIED {
			code = pluginv1.Code_CODE_INCONCLUSIVE
		}
		return &RemoteError{Code: code, Reason: reason, Inconclusive: true}
	default:
		return bad("unknown verdict %d", int32(r.GetVerdict()))
	}
}

// decideRequest puts one route on the wire. Every queue is taken as a queue
// of topic. A queue id outside the int32 range is refused with an error
// matching ErrInvalidArgument.
func decideRequest(topic string, queues []route.MessageQueue) (*pluginv1.DecideRequest, error) {
	req := &pluginv1.DecideRequest{Topic: topic, Queues: make([]*pluginv1.Queue, len(queues))}
	for i, q := range queues {
		if q.QueueID < math.MinInt32 || q.QueueID > math.MaxInt32 {
			return nil, fmt.Errorf("%w: queue %d (%s) has an id outside the int32 range", ErrInvalidArgument, i, q)
		}
		req.Queues[i] = &pluginv1.Queue{BrokerName: q.BrokerName, QueueId: int32(q.QueueID)}
	}
	return req, nil
}

// queuesOf reads a route off the wire.
func queuesOf(req *pluginv1.DecideRequest) (string, []route.MessageQueue) {
	topic := req.GetTopic()
	qs := make([]route.MessageQueue, len(req.GetQueues()))
	for i, q := range req.GetQueues() {
		qs[i] = route.MessageQueue{Topic: topic, BrokerName: q.GetBrokerName(), QueueID: int(q.GetQueueId())}
	}
	return topic, qs
}

// decideResponse puts a BatchFilter's answer for n queues on the wire. A
// filter that returned the wrong number of verdicts is reported as
// CODE_INTERNAL.
func decideResponse(n int, verdicts []bool, err error) *pluginv1.DecideResponse {
	if err == nil && len(verdicts) != n {
		err = fmt.Errorf("%w: the filter returned %d verdicts for %d queues", ErrPluginFailed, len(verdicts), n)
	}
	if err != nil {
		return &pluginv1.DecideResponse{Code: CodeOf(err), Reason: clipReason(err.Error())}
	}
	return &pluginv1.DecideResponse{Admit: verdicts}
}

// verdictsOf reads the verdicts for n queues off the wire: the verdicts, a
// *RemoteError the plugin reported, or a *BadAnswerError.
func verdictsOf(n int, r *pluginv1.DecideResponse) ([]bool, error) {
	bad := func(format string, args ...any) error {
		return &BadAnswerError{RPC: "Decide", Problem: fmt.Sprintf(format, args...)}
	}
	if r == nil {
		return nil, bad("no answer")
	}
	code := r.GetCode()
	switch {
	case !knownCode(code):
		return nil, bad("unknown code %d", int32(code))
	case code != pluginv1.Code_CODE_UNSPECIFIED:
		if len(r.GetAdmit()) != 0 {
			return nil, bad("verdicts together with error code %s", code)
		}
		return nil, &RemoteError{Code: code, Reason: clipReason(r.GetReason())}
	case len(r.GetAdmit()) != n:
		return nil, bad("%d verdicts for %d queues", len(r.GetAdmit()), n)
	}
	return r.GetAdmit(), nil
}
