package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/plugins/protocol"
)

// Detector is a probe.ServiceDetector served by a plugin process. Give it
// to a strategy with latency.WithServiceDetector. It is safe for concurrent
// use; Detect blocks until the probe's deadline (ctx's; CallTimeout when ctx
// has none) at most.
type Detector struct {
	sup *supervisor
}

var _ probe.ServiceDetector = (*Detector)(nil)

// NewDetector starts the detector plugin at cfg.Path and returns once it
// completed the handshake, or a *StartError matching ErrChecksum,
// ErrHandshake, ErrIncompatible or ErrStart (or a *ConfigError). Call Close
// when done.
func NewDetector(cfg Config) (*Detector, error) {
	sup, err := newSupervisor(cfg, protocol.KindDetector, &protocol.DetectorPlugin{})
	if err != nil {
		return nil, err
	}
	go sup.run()
	return &Detector{sup: sup}, nil
}

// ProvideDetector is NewDetector for dependency injection (google/wire): it
// returns the detector as a probe.ServiceDetector and a cleanup that
// closes it.
func ProvideDetector(cfg Config) (probe.ServiceDetector, func(), error) {
	d, err := NewDetector(cfg)
	if err != nil {
		return nil, nil, err
	}
	return d, func() { _ = d.Close() }, nil
}

// detectMargin is the part of a probe's time the plugin does not get, so
// that its answer at its deadline (its verdict, or its own "no answer" a
// probe.Grace later) arrives before the host's deadline: a fifth of
// the time, at most 100 ms.
func detectMargin(d time.Duration) time.Duration {
	return min(d/5, 100*time.Millisecond)
}

// Detect asks the plugin to probe endpoint. The plugin's answer comes back
// as a built-in detector's would: nil (reachable), an error matching
// probe.ErrInconclusive, or another error (unreachable; a
// *probe.Error whose cause matches the sentinel of the plugin's
// error code, e.g. syscall.ECONNREFUSED or context.DeadlineExceeded).
//
// The probe's deadline is ctx's: the caller owns it (see
// probe.ServiceDetector); CallTimeout applies only to a ctx without one.
// The plugin is given the time left until then less a small margin, and
// Detect answers by the deadline itself. Everything that is not the
// plugin's answer is inconclusive: the plugin is down or restarting
// (ErrUnavailable), closed (ErrClosed), did not answer by the deadline
// (ErrCallTimeout: a hung or stopped plugin says nothing about the
// endpoint), answered garbage (ErrBadAnswer), or ctx was cancelled
// (context.Canceled).
func (d *Detector) Detect(ctx context.Context, endpoint string) error {
	if err := ctx.Err(); err != nil {
		return protocol.Inconclusive(fmt.Errorf("plugin host: detect %s: %w", endpoint, err))
	}
	inst, err := d.sup.current()
	if err != nil {
		return protocol.Inconclusive(err)
	}
	client, ok := inst.raw.(*protocol.DetectorClient)
	if !ok {
		return protocol.Inconclusive(&protocol.BadAnswerError{RPC: "Detect", Problem: "the plugin is no detector"})
	}
	cctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		cctx, cancel = clock.WithTimeout(ctx, d.sup.cfg.Clock, d.sup.cfg.CallTimeout)
		defer cancel()
	}
	deadline, _ := cctx.Deadline()
	left := time.Until(deadline)
	timeout := left - detectMargin(left)
	if timeout <= 0 {
		return protocol.Inconclusive(fmt.Errorf("%w: detect %s: no time left to ask the plugin", ErrCallTimeout, endpoint))
	}
	// The call ends when cctx does, on the clock, and at no other time:
	// gRPC gets no deadline of its own, whose timer could fire before the
	// clock's or race an answer that is already in.
	callCtx, cancelCall := context.WithCancel(context.WithoutCancel(cctx))
	defer cancelCall()
	stop := context.AfterFunc(cctx, cancelCall)
	defer stop()
	err = client.Detect(callCtx, endpoint, timeout)
	var remote *protocol.RemoteError
	switch {
	case err == nil || errors.As(err, &remote):
		return err // the plugin's own verdict
	case errors.Is(ctx.Err(), context.Canceled):
		return protocol.Inconclusive(fmt.Errorf("plugin host: detect %s: %w", endpoint, context.Canceled))
	case cctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return protocol.Inconclusive(fmt.Errorf("%w: detect %s: no answer within %v", ErrCallTimeout, endpoint, left.Round(time.Millisecond)))
	}
	return protocol.Inconclusive(err) // unavailable or a bad answer
}

// Close stops the plugin process and the goroutine that supervises it, and
// waits for both. Detect answers inconclusive (ErrClosed) afterwards. Close
// is idempotent.
func (d *Detector) Close() error {
	d.sup.close()
	return nil
}
