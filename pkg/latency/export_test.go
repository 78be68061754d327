package latency

import "github.com/mqfault/mqfault/pkg/route"

// WalkOnly makes s probe queue by queue and sort the table on every
// least-bad pick, ignoring the routes' flag summaries and the kept order:
// the reference's procedure, which the model tests hold the fast path to.
// Call it before the first pick.
func WalkOnly(s *Strategy) { s.walkOnly = true }

// OnAwait makes s's detector call f when a round starts waiting for the
// probes another round has in flight. Call it before the first round.
func OnAwait(s *Strategy, f func()) { s.detector.awaiting = f }

// The detector's constructor, for the tests of its rounds.
type (
	Detector       = detector
	DetectorConfig = detectorConfig
)

var NewDetector = newDetector

// The fault table's constructor and options, for tests of tables of their own
// and of strategies sharing one.
type TableOption = tableOption

var (
	NewFaultTable     = newFaultTable
	WithFaultTable    = withFaultTable
	WithTableObserver = withTableObserver
)

// Introspection the tests check the policies and the table with.
func (s *Strategy) BackoffLevel(broker string) int            { return s.backoffLevel(broker) }
func (s *Strategy) Released(info *route.PublishInfo) []string { return s.released(info) }
func (t *FaultTable) SetReachable(broker string, reachable bool) bool {
	return t.setReachable(broker, reachable)
}
func (t *FaultTable) Retain(keep func(broker string) bool) []string { return t.retain(keep) }

// The built-in duration tables, for the tests that pin them.
var (
	V4Durations = v4Durations
	V5Durations = v5Durations
)

// Duration tables built in tests.
type DurationTableFunc = durationTableFunc

var MustStepTable = mustStepTable

// StallRemark is the capacity model's reading of a stalled store's remark.
var StallRemark = stallRemark

// AnsweredWindow is how recently a broker must have answered to count as
// Room.Answering.
const AnsweredWindow = answeredWindow
