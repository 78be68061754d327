package rocketmqgo

import "github.com/mqfault/mqfault/integrations/rocketmqgo/internal/brokerprobe"

// RemotingDetector is the default probe.ServiceDetector of the
// integration, and what the rocketmq-detector plugin serves: it asks a
// broker one question over its remoting protocol, as the reference's 5.x
// producer detector does, instead of only connecting (a stopped broker's
// kernel still completes TCP handshakes).
//
// Detect(ctx, "host:port") dials the address, sends one GET_MAX_OFFSET
// request (code 30, a JSON header with opaque, extFields topic and queueId,
// and bname when Broker is set) and reads one answer frame of at most
// MaxFrameSize bytes. It returns nil only for a response carrying the
// request's opaque, code SUCCESS and an integer offset, before ctx is done.
// A refused dial, a closed connection, a passed deadline, a non-SUCCESS
// answer (*AnswerError) or bytes that are no well-formed answer
// (ErrMalformedAnswer, saying what was wrong) are unreachable
// (*probe.Error); a cancelled ctx is inconclusive. The broker answers
// GET_MAX_OFFSET without side effects and for any topic name, so the zero
// value (topic DefaultProbeTopic, queue 0) works on any broker; inside a
// Producer the probe names queue 0 of a topic the client routes to that
// broker. Safe for concurrent use; one connection per probe, closed after
// it.
type RemotingDetector = brokerprobe.Detector

// ProbeQueue names the queue RemotingDetector.DetectQueue asks about.
type ProbeQueue = brokerprobe.Queue

// AnswerError is a broker's well-formed answer to a probe with a code other
// than SUCCESS.
type AnswerError = brokerprobe.AnswerError

// ErrMalformedAnswer is wrapped by a probe's error when the bytes the peer
// sent are not a well-formed remoting answer.
var ErrMalformedAnswer = brokerprobe.ErrMalformed

// DefaultProbeTopic is the topic RemotingDetector asks about when none is
// given: TBW102, the auto-create key topic every reference producer holds.
const DefaultProbeTopic = brokerprobe.DefaultTopic
