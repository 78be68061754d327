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
// loop asks about a busy answer (the Loop documentation's "No room"): a
// Drive over a Strategy that is also a RoomModel asks it, and only it, when
// an attempt on broker met the send's second busy answer whose remark says
// the broker's send pool was full (latency.FullRemark) and the mode's rules
// would retry it. *latency.Strategy is one.
//
// RoomElsewhere reports whether a broker other than broker may have room
// for the retry; false ends the send (StopNoRoom) instead of retrying. A
// strategy without a capacity model reports true, as *latency.Strategy does
// with its model off. It is called on the send path, possibly from many
// goroutines at once: it must be safe for concurrent use and must not
// block.
//
// AttemptElsewhere reports whether an attempt other than one on broker may
// go somewhere: another broker is reachable. The
// loop asks it before capping an attempt on broker by
// Config.MaxTimeoutPerRequest: when there is nowhere else to go, a retry
// would come back to broker or to a broker that is down, so the attempt
// gets the whole budget left instead of being cut for a retry that cannot
// help. A strategy without a capacity model reports true (the cap applies
// as the reference applies it), as *latency.Strategy does with its model
// off. The same rules of concurrency apply.
//
// OnlyRoom reports whether broker is the room the cluster has: it answers,
// has room, and every other reachable broker is without room. The loop asks
// it only when AttemptElsewhere(broker) is false; true gives the attempt the
// whole budget left (uncapped), since a retry would meet push-back while
// the broker stores what it answers, however slowly. A strategy without a
// capacity model reports false. The same rules of concurrency apply.
type RoomModel interface {
	RoomElsewhere(broker string) bool
	AttemptElsewhere(broker string) bool
	OnlyRoom(broker string) bool
}

var _ RoomModel = (*latency.Strategy)(nil)
