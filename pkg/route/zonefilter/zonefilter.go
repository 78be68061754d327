// Package zonefilter is a route.QueueFilter that keeps sends in one zone: it
// admits the queues of the brokers of a preferred zone, and every queue of a
// route that has no broker in that zone. The broker-to-zone map usually
// comes from a file (see ParseZones).
//
// The decision needs the whole route, so it is made in batch: call
// Filter.Update with every new publish info of a topic; Filter then answers
// per queue from that decision, with no lock and no allocation. The same
// decision (Decide) is what the zone-filter plugin
// (plugins/cmd/zone-filter) serves, so the filter compiled in and the
// plugin agree.
package zonefilter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mqfault/mqfault/pkg/route"
)

// Zones maps broker names to zone names.
type Zones map[string]string

// ErrInvalidZones is what every error about a zone map matches.
var ErrInvalidZones = errors.New("zonefilter: invalid zone map")

// ParseError says which line of a zone map is wrong and why. It matches
// ErrInvalidZones.
type ParseError struct {
	Line   int
	Text   string
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("zonefilter: line %d %q: %s", e.Line, e.Text, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidZones) true.
func (e *ParseError) Is(target error) bool { return target == ErrInvalidZones }

// maxLine bounds a line of a zone map.
const maxLine = 64 << 10

// ParseZones reads a zone map: one "BROKER ZONE" pair per line, separated by
// spaces or tabs. Blank lines are skipped and '#' starts a comment. A line
// with another number of fields, or a broker listed twice, is an error
// (*ParseError).
//
//	# broker      zone
//	broker-a      az1
//	broker-b      az2
func ParseZones(r io.Reader) (Zones, error) {
	zones := make(Zones)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		line, _, _ := strings.Cut(text, "#")
		fields := strings.Fields(line)
		switch len(fields) {
		case 0:
			continue
		case 2:
		default:
			return nil, &ParseError{Line: n, Text: text, Reason: fmt.Sprintf("want BROKER ZONE, got %d fields", len(fields))}
		}
		if z, dup := zones[fields[0]]; dup {
			return nil, &ParseError{Line: n, Text: text, Reason: "broker " + fields[0] + " is already in zone " + z}
		}
		zones[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidZones, err)
	}
	return zones, nil
}

// LoadZones reads the zone map in the file at path (see ParseZones).
func LoadZones(path string) (Zones, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := ParseZones(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return z, nil
}

// Decide is the zone filter's decision over one route's queues: when any
// queue is on a broker of zone, exactly those queues are admitted; when none
// is, all are. It returns one verdict per queue.
func Decide(zone string, zones Zones, queues []route.MessageQueue) []bool {
	out := make([]bool, len(queues))
	found := false
	for i, q := range queues {
		if z, ok := zones[q.BrokerName]; ok && z == zone {
			out[i], found = true, true
		}
	}
	if !found {
		for i := range out {
			out[i] = true
		}
	}
	return out
}

// Filter is the zone filter compiled in. All methods are safe for
// concurrent use; Filter never blocks or allocates.
type Filter struct {
	zone   string
	zones  Zones
	inZone map[string]bool // brokers of zone

	mu         sync.Mutex                      // serialises writers of restricted
	restricted atomic.Pointer[map[string]bool] // topic -> its route has a broker of zone
}

var _ route.QueueFilter = (*Filter)(nil)

// New returns a filter that prefers zone, with the broker-to-zone map zones
// (copied). It knows no route yet: until Update is called for a topic, every
// queue of that topic is admitted.
func New(zone string, zones Zones) (*Filter, error) {
	if zone == "" {
		return nil, fmt.Errorf("%w: the preferred zone is empty", ErrInvalidZones)
	}
	f := &Filter{zone: zone, zones: maps.Clone(zones), inZone: make(map[string]bool)}
	for b, z := range zones {
		if z == zone {
			f.inZone[b] = true
		}
	}
	f.restricted.Store(&map[string]bool{})
	return f, nil
}

// Zone returns the preferred zone.
func (f *Filter) Zone() string { return f.zone }

// Update decides for info's route (its topic's new route): from now on a
// queue of that topic is admitted when it is on a broker of the preferred
// zone, or when no broker of the route is. A nil info is ignored.
func (f *Filter) Update(info *route.PublishInfo) {
	if info == nil {
		return
	}
	restrict := false
	for _, b := range info.Brokers() {
		if f.inZone[b] {
			restrict = true
			break
		}
	}
	f.set(info.Topic(), restrict, true)
}

// Remove forgets topic's route: its queues are admitted.
func (f *Filter) Remove(topic string) { f.set(topic, false, false) }

func (f *Filter) set(topic string, restrict, keep bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := *f.restricted.Load()
	if cur, ok := old[topic]; ok == keep && cur == restrict {
		return
	}
	m := maps.Clone(old)
	if keep {
		m[topic] = restrict
	} else {
		delete(m, topic)
	}
	f.restricted.Store(&m)
}

// Filter reports whether q may be picked.
func (f *Filter) Filter(q route.MessageQueue) bool {
	if !(*f.restricted.Load())[q.Topic] {
		return true
	}
	return f.inZone[q.BrokerName]
}

// Decide is Decide with the filter's zone and map, in the shape of a
// batch filter plugin (protocol.BatchFilter); it never fails.
func (f *Filter) Decide(_ context.Context, _ string, queues []route.MessageQueue) ([]bool, error) {
	return Decide(f.zone, f.zones, queues), nil
}
