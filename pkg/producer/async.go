package producer

import (
	"context"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/mqfault/mqfault/pkg/clock"
)

// SendAsync starts sending msg and returns; cb receives the end. The send
// follows the reference's async path (see Loop): one attempt picked as a
// sync first attempt, then up to Config.AsyncRetryTimes retries, each picked
// avoiding the broker that failed (no index reset), while budget is left.
// An answer with a broker error code is not retried, as in the reference.
//
// SendAsync returns an error, and never calls cb, when the send is not
// accepted: ErrInvalidMessage (nil message or callback, empty topic),
// ErrClosed, a *LimitError (the bound on in-flight async sends is reached
// and Config.AsyncFailFast is set, or the send waited for room until its
// budget ran out), or ctx's error (ctx was done while it waited). When it
// returns nil, cb is called exactly once, on a producer goroutine, with the
// answer or an error as SendSync's — also when the producer is closed
// meanwhile (the send then completes its attempt in flight, or ends with
// ErrClosed instead of retrying). A panicking cb is recovered and logged.
//
// SendAsync blocks only while it waits for room under the bound; ctx governs
// that wait and the whole send, retries included (use
// context.WithoutCancel to let a send outlive a request's ctx).
func (p *Producer) SendAsync(ctx context.Context, msg *Message, cb Callback) error {
	if err := checkMessage(msg); err != nil {
		return err
	}
	if cb == nil {
		return errNilCallback
	}
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return ErrClosed
	}
	p.async.Add(1)
	p.mu.RUnlock()
	start := p.clock.Now()
	held, err := p.acquire(ctx, msg, start)
	if err != nil {
		p.async.Done()
		return err
	}
	go p.runAsync(ctx, msg, cb, start, held)
	return nil
}

func (p *Producer) runAsync(ctx context.Context, msg *Message, cb Callback, start time.Time, held int64) {
	defer p.async.Done()
	res, err := p.sendAsync(ctx, msg, start)
	p.release(held)
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("producer: async send callback panicked", "topic", msg.Topic, "panic", r)
		}
	}()
	cb(res, err)
}

func (p *Producer) sendAsync(ctx context.Context, msg *Message, start time.Time) (Result, error) {
	info, _, err := p.route(ctx, msg.Topic, KindAsync, start)
	if err != nil {
		p.routeFailed(msg.Topic, KindAsync, start, err)
		return Result{}, err
	}
	var d Drive
	d.Reset(p.strat, info, p.policy, KindAsync, start)
	p.run(ctx, &d, msg, p.clock.Now())
	return p.end(d.Loop(), msg.Topic)
}

// acquire takes room for one async send of msg under the in-flight bounds,
// waiting for it unless Config.AsyncFailFast. It returns the bytes it holds
// (for release).
func (p *Producer) acquire(ctx context.Context, msg *Message, start time.Time) (int64, error) {
	if p.count != nil && !p.count.TryAcquire(1) {
		if err := p.wait(ctx, p.count, 1, start, "count", int64(p.cfg.AsyncMaxInFlight)); err != nil {
			return 0, err
		}
	}
	if p.bytes == nil {
		return 0, nil
	}
	size := msg.size()
	var err error
	switch {
	case size > p.cfg.AsyncMaxBytes:
		err = &LimitError{Limit: "bytes", Max: p.cfg.AsyncMaxBytes}
	case !p.bytes.TryAcquire(size):
		err = p.wait(ctx, p.bytes, size, start, "bytes", p.cfg.AsyncMaxBytes)
	}
	if err != nil {
		if p.count != nil {
			p.count.Release(1)
		}
		return 0, err
	}
	return size, nil
}

// wait acquires n of sem, for at most what is left of the send's budget on
// the clock, until ctx is done or the producer closes.
func (p *Producer) wait(ctx context.Context, sem *semaphore.Weighted, n int64, start time.Time, limit string, bound int64) error {
	if p.cfg.AsyncFailFast {
		return &LimitError{Limit: limit, Max: bound}
	}
	left := p.policy.timeout - p.clock.Now().Sub(start)
	if left <= 0 {
		return &LimitError{Limit: limit, Max: bound, Waited: true}
	}
	wctx, cancel := clock.WithTimeout(ctx, p.clock, left)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	if err := sem.Acquire(wctx, n); err != nil {
		switch {
		case p.ctx.Err() != nil:
			return ErrClosed
		case ctx.Err() != nil:
			return ctx.Err()
		}
		return &LimitError{Limit: limit, Max: bound, Waited: true}
	}
	return nil
}

func (p *Producer) release(held int64) {
	if p.count != nil {
		p.count.Release(1)
	}
	if held > 0 {
		p.bytes.Release(held)
	}
}
