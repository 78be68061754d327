package latency

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
