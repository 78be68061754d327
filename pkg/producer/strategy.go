package producer

import (
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// Strategy picks the queue of each attempt of a send through the
// fault-tolerant path and learns what the attempt met through its pick
// (latency.Pick.Done): the part of a selector the producer uses.
// *latency.Strategy is the one mqfault provides; a user may plug another in
// (or a mock: mocks.MockStrategy).
//
// Select is called on every attempt, possibly from many goroutines at once:
// it must be safe for concurrent use and must not block. ok=false means the
// publish info has no queue for the attempt (the send then fails with a
// *RouteError). A pick whose Reporter is nil learns nothing.
//
// Mode says whose send loop the producer follows (retry codes, budgets,
// index resets): latency.ModeV5 or latency.ModeV4.
//
// RouteChanged and RouteRemoved tell the strategy of every route the
// producer installs or drops, before the first pick on a new one: the
// strategy knows from them which brokers its routes name (and
// *latency.Strategy drops the fault items of brokers none names). They may
// block for a while; they are never called on the send path.
type Strategy interface {
	Select(info *route.PublishInfo, in latency.PickInfo) (latency.Pick, bool)
	Mode() latency.Mode
	RouteChanged(info *route.PublishInfo)
	RouteRemoved(topic string)
}

var _ Strategy = (*latency.Strategy)(nil)

// RoomModel is the part of a Strategy with a capacity model that the send
// loop asks about the room the cluster has (the Loop documentation's "No
// room", and Config.MaxTimeoutPerRequest). A Drive over a Strategy that is
// also a RoomModel asks it, and only it; *latency.Strategy is one.
//
// Room returns the model's account of the room around broker: whether it
// has room and answers, its answers' average latency, and how many other
// brokers are reachable, serving and with room. The loop decides by it:
//   - before capping an attempt on broker by Config.MaxTimeoutPerRequest:
//     an average latency of half the cap or more leaves the attempt
//     uncapped (the cap would cut most of its answers); else
//     AttemptElsewhere: false means a retry would come back to broker, to
//     a broker that is down, or to push-back, so the attempt keeps all but
//     one cap of the budget, or the whole of it when broker is the only
//     room (Only);
//   - after the send's second busy answer whose remark says the broker's
//     send pool was full (latency.FullRemark), when the mode's rules would
//     retry, RetryElsewhere: false ends the send (StopNoRoom).
//
// A strategy without a capacity model returns the zero Room, whose rules
// answer as the reference behaves (the cap applies, busy answers are
// retried), as *latency.Strategy does with its model off. Room is called on
// the send path, possibly from many goroutines at once: it must be safe for
// concurrent use and must not block.
type RoomModel interface {
	Room(broker string) latency.Room
}

var _ RoomModel = (*latency.Strategy)(nil)
