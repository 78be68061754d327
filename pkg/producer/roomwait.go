package producer

import (
	"math"
	"sync"
	"time"
)

// This file holds the room-wait allowance (Config.RoomWait). A sync send
// that meets push-back and would end for want of room (the Loop
// documentation's "Waiting for room") may wait instead, and try again once
// its wait is over. Waiting pays only where the sends come from a closed
// loop (a fixed set of senders, each sending after its previous send
// ended): a sender that waits sends nothing meanwhile, so the load falls
// to what the brokers take and the waiting sends find room when they try
// again. Where the sends arrive whatever happened to earlier ones (an open
// load: requests served by a handler that sends), waiting holds no send
// back: the push-back goes on, and the waiting sends only move a failure
// from the fast end of the latencies to the slow end. A producer cannot
// tell the two loads apart from its sends, so the allowance tells them
// apart by what waiting does:
//
//   - Sends pay for waits: each sync send deposits RoomWait of a wait, and
//     the allowance holds at most two windows' deposits (at least one
//     wait), so it never waits more than that share of its sends.
//   - An episode is a run of requests (sends that would end for want of
//     room) without a gap of reliefWindow. In an episode's second window the
//     requests must have fallen to at most half of its first window's: in a
//     closed loop the first waits take their senders' sends away and the
//     push-back stops within the senders' cycle; in an open one it goes on.
//     An episode that fails the test, or that empties the allowance (more
//     sends want to wait than the share allows: waiting is not what
//     relieves it), waits no more until it ends; the episodes that begin
//     within reliefWindow of it do not wait either, and that hold doubles
//     with each failed episode in a row (up to 64 s) until an episode
//     passes the relief test.
//
// So an open load under push-back makes at most one window of waits per
// episode, fewer and fewer as its episodes fail, and a closed one keeps
// waiting while its waits relieve the push-back.

// reliefWindow is the allowance's unit of time: the gap that ends an
// episode, the windows the relief test compares, and half the most the
// allowance holds. It is shorter than a wait (the send's budget less one
// attempt's share: 2 s of DefaultConfig's 3 s), so an episode is judged
// before its first waits end.
const reliefWindow = time.Second

// maxStrikes bounds the failed episodes a hold counts: the longest hold is
// reliefWindow << maxStrikes (64 s).
const maxStrikes = 6

// oneWait is one wait in the allowance's units.
const oneWait = 1_000_000

// roomWait is one producer's room-wait allowance, shared by its sends. Its
// methods take the time from the caller (the Loop's now, from the
// producer's Clock); they hold a mutex for a few arithmetic operations and
// allocate nothing.
type roomWait struct {
	share int64 // millionths of a wait each send deposits (integers keep the sums exact)

	mu      sync.Mutex
	tokens  int64     // millionths of a wait
	window  int64     // the current window's index (now / reliefWindow)
	sends   int64     // sends deposited in the current window
	before  int64     // sends deposited in the window before it
	last    time.Time // the latest request
	episode time.Time // the current episode's first request
	early   int       // requests in the episode's first window
	late    int       // requests in its second window
	dry     bool      // the episode waits no more
	hold    time.Time // episodes beginning before it wait no more
	strikes int       // episodes in a row whose waits failed
}

func newRoomWait(cfg Config) *roomWait {
	if cfg.RoomWait <= 0 {
		return nil
	}
	return &roomWait{share: max(int64(math.Round(cfg.RoomWait*oneWait)), 1)}
}

// deposit records a sync send started at now.
func (w *roomWait) deposit(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur := now.UnixNano() / int64(reliefWindow); cur != w.window {
		w.before = 0
		if cur == w.window+1 {
			w.before = w.sends
		}
		w.window, w.sends = cur, 0
	}
	w.sends++
	most := max(2*w.share*max(w.before, w.sends), oneWait)
	w.tokens = min(w.tokens+w.share, most)
}

// request asks, at now, for a wait for a send that would end for want of
// room, and reports whether it may wait. Every request counts towards the
// episode's relief test, granted or not.
func (w *roomWait) request(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last.IsZero() || now.Sub(w.last) > reliefWindow {
		// A new episode tries waiting unless the last ones failed lately.
		w.episode, w.early, w.late, w.dry = now, 0, 0, now.Before(w.hold)
	}
	w.last = now
	switch e := now.Sub(w.episode); {
	case e < reliefWindow:
		w.early++
	case e < 2*reliefWindow:
		w.late++
		if 2*w.late > w.early {
			w.fail(now) // the push-back goes on: waiting does not relieve it
		}
	default:
		if !w.dry {
			w.strikes = 0 // the episode passed the relief test
		}
	}
	if w.dry {
		return false
	}
	if w.tokens < oneWait {
		w.fail(now) // more sends want to wait than the share allows
		return false
	}
	w.tokens -= oneWait
	return true
}

// fail ends the episode's waits: waiting did not relieve its push-back.
// The episodes that begin within reliefWindow x 2^strikes wait no more
// either, and each failure in a row doubles that, up to maxStrikes. Caller
// holds w.mu.
func (w *roomWait) fail(now time.Time) {
	if w.dry {
		return
	}
	w.dry = true
	w.hold = now.Add(reliefWindow << w.strikes)
	w.strikes = min(w.strikes+1, maxStrikes)
}
