package trace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// Topic is the one topic a trace works on.
const Topic = "T"

// StartMillis is where a trace's clock starts, in milliseconds.
const StartMillis = 1000000

// MaxLineBytes bounds one line of a trace.
const MaxLineBytes = 1 << 20

// LineError is a trace that cannot go on: a malformed line, an operation its
// mode lacks, an invalid duration table.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return "line " + strconv.Itoa(e.Line) + ": " + e.Err.Error() }
func (e *LineError) Unwrap() error { return e.Err }

// maxLineErrors bounds the lines Run reports as malformed before it stops
// listing them.
const maxLineErrors = 50

// Run reads a trace from r and runs it, writing its output to w line by line,
// in mode (latency.ModeV5 or latency.ModeV4). It reads the whole trace and
// checks every line's syntax first (an unknown operation, one its mode
// lacks, a wrong number of arguments, an argument that does not parse): if
// any line is malformed, nothing runs and the error lists every one, a
// *LineError per line (at most 50, then one saying how many more), joined,
// one per line. Otherwise the trace runs, and stops at the first line that
// cannot run (no route yet, an invalid duration table, the clock past its
// range) with that line's *LineError; what was printed before stays
// printed. A read error is returned as it is.
func Run(r io.Reader, w io.Writer, mode latency.Mode) error {
	m, err := newMachine(w, mode)
	if err != nil {
		return err
	}
	defer m.close()
	lines, readErr := readLines(r)
	var errs []error
	for i, text := range lines {
		if err := m.check(text); err != nil {
			if len(errs) == maxLineErrors {
				errs = append(errs, &LineError{Line: i + 1, Err: fmt.Errorf("this line and others after it have problems too (only the first %d are listed)", maxLineErrors)})
				break
			}
			errs = append(errs, &LineError{Line: i + 1, Err: err})
		}
	}
	if readErr != nil {
		var le *LineError
		if len(errs) == 0 || !errors.As(readErr, &le) {
			return readErr
		}
		errs = append(errs, readErr)
	}
	switch len(errs) {
	case 0:
	case 1:
		return errs[0]
	default:
		return errors.Join(errs...)
	}
	for i, text := range lines {
		if err := m.exec(text); err != nil {
			return &LineError{Line: i + 1, Err: err}
		}
	}
	return nil
}

// readLines reads r's lines; a line longer than MaxLineBytes is a
// *LineError (the lines before it are returned).
func readLines(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), MaxLineBytes)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return lines, &LineError{Line: len(lines) + 1, Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}
		}
		return lines, err
	}
	return lines, nil
}

// machine is the state a trace runs on.
type machine struct {
	out   io.Writer
	mode  latency.Mode
	clock *latency.ManualClock
	rand  *queuedRandom
	strat *latency.Strategy
	info  *route.PublishInfo

	latencyMax   []time.Duration // the duration table's columns as the trace set them
	notAvailable []time.Duration
	tableSet     bool // a column was replaced since the table was last installed

	resolve map[string]string // broker -> address; "" means null
	probes  map[string]bool

	send sendSettings
}

type sendSettings struct {
	retryTimes         int
	retryAnotherBroker bool
	timeout            time.Duration
	retryCodes         map[int]bool
}

func newMachine(w io.Writer, mode latency.Mode) (*machine, error) {
	if mode == "" {
		mode = latency.ModeV5
	}
	if mode != latency.ModeV5 && mode != latency.ModeV4 {
		return nil, fmt.Errorf("unknown mode %q (want v5 or v4)", mode)
	}
	m := &machine{
		out:     w,
		mode:    mode,
		clock:   latency.NewManualClock(time.UnixMilli(StartMillis)),
		rand:    &queuedRandom{},
		resolve: map[string]string{},
		probes:  map[string]bool{},
	}
	cfg := latency.Reference5()
	if mode == latency.ModeV4 {
		cfg = latency.Reference4()
	}
	resolver := latency.ResolverFunc(func(b string) (string, bool) {
		a, set := m.resolve[b]
		if !set {
			return "addr-" + b, true
		}
		return a, a != ""
	})
	detector := latency.ServiceDetectorFunc(func(_ context.Context, addr string) error {
		if m.probes[addr] {
			return nil
		}
		return errors.New("unreachable")
	})
	s, err := latency.NewStrategy(cfg, latency.WithClock(m.clock), latency.WithResolver(resolver),
		latency.WithServiceDetector(detector), latency.WithRandom(m.rand))
	if err != nil {
		return nil, err
	}
	m.strat = s
	m.latencyMax, m.notAvailable = latency.V5Durations().Columns()
	if mode == latency.ModeV4 {
		m.latencyMax, m.notAvailable = latency.V4Durations().Columns()
	}
	m.send = defaultSendSettings(mode)
	return m, nil
}

func defaultSendSettings(mode latency.Mode) sendSettings {
	codes := []int{17, 14, 1, 2, 16, 204, 205, 1500}
	if mode == latency.ModeV4 {
		codes = []int{17, 14, 1, 16, 204, 205}
	}
	s := sendSettings{retryTimes: 2, timeout: 3000 * time.Millisecond, retryCodes: map[int]bool{}}
	for _, c := range codes {
		s.retryCodes[c] = true
	}
	return s
}

func (m *machine) close() { _ = m.strat.Close() }

func (m *machine) printf(format string, args ...any) {
	fmt.Fprintf(m.out, format+"\n", args...)
}

// queuedRandom is the trace's random source: a new index starts at 0 (traces
// set it), and each reset takes the next value queued by resetrand.
type queuedRandom struct {
	queue   []int32
	missing bool // a reset found nothing queued
}

func (q *queuedRandom) Int32() int32 { return 0 }

func (q *queuedRandom) Int32n(int32) int32 {
	if len(q.queue) == 0 {
		q.missing = true
		return 0
	}
	v := q.queue[0]
	q.queue = q.queue[1:]
	return v
}

// parse splits a line into its operation and arguments and checks what does
// not depend on the trace's state: the operation exists in the mode, and its
// argument count. spec is nil for a line with nothing to run (blank, a
// comment, resetrand in v4).
func (m *machine) parse(line string) (op string, args []string, spec *opSpec, err error) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	words := strings.Fields(line)
	if len(words) == 0 {
		return "", nil, nil, nil
	}
	op, args = words[0], words[1:]
	sp, ok := ops[op]
	if !ok {
		return op, nil, nil, fmt.Errorf("unknown operation %q", op)
	}
	if sp.only != "" && sp.only != m.mode {
		if op == "resetrand" { // accepted and ignored in v4
			return op, nil, nil, nil
		}
		return op, nil, nil, fmt.Errorf("%s: not available in mode %s", op, m.mode)
	}
	if len(args) < sp.min || (sp.max >= 0 && len(args) > sp.max) {
		return op, nil, nil, fmt.Errorf("%s: %s", op, sp.usage)
	}
	return op, args, &sp, nil
}

// check reports what is wrong with a line before the trace runs: what parse
// checks, and that its arguments parse (checks).
func (m *machine) check(line string) error {
	op, args, spec, err := m.parse(line)
	if err != nil || spec == nil {
		return err
	}
	if c := checks[op]; c != nil {
		if err := c(args); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}

// exec runs one line.
func (m *machine) exec(line string) error {
	op, args, spec, err := m.parse(line)
	if err != nil || spec == nil {
		return err
	}
	m.rand.missing = false
	if err := spec.run(m, args); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if m.rand.missing {
		return fmt.Errorf("%s: reset() with no value queued by resetrand", op)
	}
	return nil
}

type opSpec struct {
	min, max int          // argument count bounds; max -1 is unbounded
	only     latency.Mode // "" for both modes
	usage    string
	run      func(m *machine, args []string) error
}

var ops map[string]opSpec

func init() {
	ops = map[string]opSpec{
		"clock":                {1, 1, "", "usage: clock MS", (*machine).opClock},
		"advance":              {1, 1, "", "usage: advance MS", (*machine).opAdvance},
		"echo":                 {0, -1, "", "", (*machine).opEcho},
		"set":                  {1, -1, "", "usage: set retryTimes N | retryAnotherBroker true|false | timeout MS | retryCodes C...", (*machine).opSet},
		"route":                {1, 1, "", "usage: route name:queues[:perm][:nomaster],...", (*machine).opRoute},
		"orderroute":           {1, 1, "", "usage: orderroute broker:count;...", (*machine).opOrderRoute},
		"index":                {1, 1, "", "usage: index N", (*machine).opIndex},
		"dumpindex":            {0, 0, "", "takes no arguments", (*machine).opDumpIndex},
		"resetrand":            {1, -1, latency.ModeV5, "usage: resetrand V...", (*machine).opResetRand},
		"enable":               {1, 1, "", "usage: enable true|false", (*machine).opEnable},
		"detector":             {1, 1, latency.ModeV5, "usage: detector true|false", (*machine).opDetector},
		"latencyMax":           {0, -1, "", "", (*machine).opLatencyMax},
		"notAvailableDuration": {0, -1, "", "", (*machine).opNotAvailable},
		"select":               {1, 2, "", "usage: select LAST|- [reset]", (*machine).opSelect},
		"tpselect":             {1, 1, "", "usage: tpselect LAST|-", (*machine).opTPSelect},
		"update":               {3, 4, "", "usage: update BROKER LATENCY ISOLATION [REACHABLE]", (*machine).opUpdate},
		"lftupdate":            {3, 4, "", "usage: lftupdate BROKER LATENCY DURATION [REACHABLE]", (*machine).opLFTUpdate},
		"available":            {1, 1, "", "usage: available BROKER", (*machine).opAvailable},
		"reachable":            {1, 1, latency.ModeV5, "usage: reachable BROKER", (*machine).opReachable},
		"remove":               {1, 1, "", "usage: remove BROKER", (*machine).opRemove},
		"pick":                 {0, 0, latency.ModeV4, "takes no arguments", (*machine).opPick},
		"worst":                {1, 1, latency.ModeV4, "usage: worst N", (*machine).opWorst},
		"resolve":              {2, 2, latency.ModeV5, "usage: resolve BROKER ADDR|null", (*machine).opResolve},
		"probe":                {2, 2, latency.ModeV5, "usage: probe ADDR true|false", (*machine).opProbe},
		"detectround":          {0, 0, latency.ModeV5, "takes no arguments", (*machine).opDetectRound},
		"items":                {0, 0, "", "takes no arguments", (*machine).opItems},
		"send":                 {1, -1, "", "usage: send SYNC|ASYNC|ONEWAY OUTCOME...", (*machine).opSend},
	}
}

func parseMillis(s string) (time.Duration, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	if v > math.MaxInt64/int64(time.Millisecond) {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return time.Duration(v) * time.Millisecond, nil
}

func parseInt32(s string) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 32-bit decimal number", s)
	}
	return int32(v), nil
}

func parseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", s)
}

func brokerArg(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// MaxClockMillis bounds the trace clock. Fault-table times are Unix
// nanoseconds, so the clock plus the longest isolation must stay inside int64
// nanoseconds (the year 2262); 9e12 ms is in 2255.
const MaxClockMillis = 9_000_000_000_000

// clockTarget checks that the clock may move to ms.
func clockTarget(ms int64) (time.Time, error) {
	if ms > MaxClockMillis {
		return time.Time{}, fmt.Errorf("the clock would reach %d ms, past the largest the trace supports (%d)", ms, int64(MaxClockMillis))
	}
	return time.UnixMilli(ms), nil
}

func (m *machine) opClock(a []string) error {
	d, err := parseMillis(a[0])
	if err != nil {
		return err
	}
	t, err := clockTarget(d.Milliseconds())
	if err != nil {
		return err
	}
	// The reference has one clock, the wall clock, and a step back moves
	// every comparison it makes: the trace's clock moves back as a whole, and
	// the table re-derives which isolations are in force.
	moveBack := t.Before(m.clock.Now())
	m.clock.Rewind(t)
	if moveBack {
		if t := m.strat.Table(); t != nil {
			t.Resync()
		}
	}
	return nil
}

func (m *machine) opAdvance(a []string) error {
	d, err := parseMillis(a[0])
	if err != nil {
		return err
	}
	return m.advance(d)
}

// advance moves the clock forward by d, within MaxClockMillis.
func (m *machine) advance(d time.Duration) error {
	now := m.clock.Now().UnixMilli()
	if d.Milliseconds() > MaxClockMillis-now {
		return fmt.Errorf("the clock would pass %d ms, the largest the trace supports", int64(MaxClockMillis))
	}
	m.clock.Advance(d)
	return nil
}

func (m *machine) opEcho(a []string) error {
	m.printf("%s", strings.Join(a, " "))
	return nil
}

func (m *machine) opSet(a []string) error { return m.send.set(a) }

// set applies one set line's arguments to s.
func (s *sendSettings) set(a []string) error {
	if len(a) < 2 && a[0] != "retryCodes" {
		return fmt.Errorf("set %s: missing value", a[0])
	}
	switch a[0] {
	case "retryTimes":
		if len(a) != 2 {
			return errors.New("usage: set retryTimes N")
		}
		n, err := strconv.Atoi(a[1])
		if err != nil || n < 0 || n > 1000 {
			return fmt.Errorf("retryTimes %q must be a number between 0 and 1000", a[1])
		}
		s.retryTimes = n
	case "retryAnotherBroker":
		if len(a) != 2 {
			return errors.New("usage: set retryAnotherBroker true|false")
		}
		b, err := parseBool(a[1])
		if err != nil {
			return err
		}
		s.retryAnotherBroker = b
	case "timeout":
		if len(a) != 2 {
			return errors.New("usage: set timeout MS")
		}
		d, err := parseMillis(a[1])
		if err != nil {
			return err
		}
		s.timeout = d
	case "retryCodes":
		codes := map[int]bool{}
		for _, v := range a[1:] {
			c, err := parseInt32(v)
			if err != nil {
				return err
			}
			codes[int(c)] = true
		}
		s.retryCodes = codes
	default:
		return fmt.Errorf("unknown setting %q", a[0])
	}
	return nil
}

// parseRouteSpec reads name:queues[:perm][:nomaster],... into route data, queue
// data in the order written.
func parseRouteSpec(spec string) (*route.TopicRouteData, error) {
	data := &route.TopicRouteData{}
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		f := strings.Split(part, ":")
		if len(f) < 2 || len(f) > 4 || f[0] == "" {
			return nil, fmt.Errorf("%q is not name:queues[:perm][:nomaster]", part)
		}
		nums, err := strconv.Atoi(f[1])
		if err != nil || nums < 0 || nums > route.MaxQueuesPerBroker {
			return nil, fmt.Errorf("%q: queue count %q must be between 0 and %d", part, f[1], route.MaxQueuesPerBroker)
		}
		perm := route.PermRead | route.PermWrite
		master := true
		for _, extra := range f[2:] {
			if extra == "nomaster" {
				master = false
				continue
			}
			p, err := strconv.Atoi(extra)
			if err != nil || p < 0 || p > 15 {
				return nil, fmt.Errorf("%q: %q is neither a permission (0-15) nor nomaster", part, extra)
			}
			perm = p
		}
		data.QueueDatas = append(data.QueueDatas, route.QueueData{BrokerName: f[0], ReadQueueNums: nums, WriteQueueNums: nums, Perm: perm})
		if !seen[f[0]] {
			seen[f[0]] = true
			addrs := map[int64]string{1: "slave-" + f[0]}
			if master {
				addrs = map[int64]string{route.MasterID: "addr-" + f[0]}
			}
			data.BrokerDatas = append(data.BrokerDatas, route.BrokerData{BrokerName: f[0], BrokerAddrs: addrs})
		}
	}
	return data, nil
}

func (m *machine) setRoute(data *route.TopicRouteData) error {
	info, err := route.NewPublishInfo(Topic, data, route.WithRandom(m.rand))
	if err != nil {
		return err
	}
	m.info = info
	m.rand.queue = nil // a new route, a new index: queued reset values are gone
	return nil
}

func (m *machine) printRoute(suffix string) {
	qs := m.info.Queues()
	parts := make([]string, len(qs))
	for i, q := range qs {
		parts[i] = q.String()
	}
	m.printf("route -> [%s]%s", strings.Join(parts, " "), suffix)
}

func (m *machine) opRoute(a []string) error {
	data, err := parseRouteSpec(a[0])
	if err != nil {
		return err
	}
	if err := m.setRoute(data); err != nil {
		return err
	}
	m.printRoute("")
	return nil
}

func (m *machine) opOrderRoute(a []string) error {
	if err := m.setRoute(&route.TopicRouteData{OrderTopicConf: route.Str(a[0])}); err != nil {
		return err
	}
	m.printRoute(" order=true")
	return nil
}

func (m *machine) needRoute() error {
	if m.info == nil {
		return errors.New("no route yet (use route or orderroute first)")
	}
	return nil
}

func (m *machine) opIndex(a []string) error {
	if err := m.needRoute(); err != nil {
		return err
	}
	v, err := parseInt32(a[0])
	if err != nil {
		return err
	}
	m.info.Index().Store(v)
	return nil
}

func (m *machine) opDumpIndex([]string) error {
	if err := m.needRoute(); err != nil {
		return err
	}
	m.printf("index = %d", m.info.Index().Load())
	return nil
}

func (m *machine) opResetRand(a []string) error {
	for _, s := range a {
		v, err := parseInt32(s)
		if err != nil {
			return err
		}
		m.rand.queue = append(m.rand.queue, v)
	}
	return nil
}

func (m *machine) opEnable(a []string) error {
	b, err := parseBool(a[0])
	if err != nil {
		return err
	}
	m.strat.SetFaultTolerance(b)
	return nil
}

func (m *machine) opDetector(a []string) error {
	b, err := parseBool(a[0])
	if err != nil {
		return err
	}
	m.strat.SetDetector(b)
	return nil
}

func parseColumn(a []string) ([]time.Duration, error) {
	out := make([]time.Duration, len(a))
	for i, s := range a {
		d, err := parseMillis(s)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func (m *machine) opLatencyMax(a []string) error {
	col, err := parseColumn(a)
	if err != nil {
		return err
	}
	m.latencyMax, m.tableSet = col, true
	return nil
}

func (m *machine) opNotAvailable(a []string) error {
	col, err := parseColumn(a)
	if err != nil {
		return err
	}
	m.notAvailable, m.tableSet = col, true
	return nil
}

// consultTable installs the trace's duration table when the strategy is about
// to consult it (fault tolerance on), failing if the columns do not make a
// valid table.
func (m *machine) consultTable() error {
	if !m.strat.FaultToleranceEnabled() || !m.tableSet {
		return nil
	}
	t, err := latency.NewStepTable(m.latencyMax, m.notAvailable)
	if err != nil {
		return fmt.Errorf("invalid duration table: %w", err)
	}
	m.strat.SetDurations(t)
	m.tableSet = false
	return nil
}

func (m *machine) opSelect(a []string) error {
	if err := m.needRoute(); err != nil {
		return err
	}
	reset := false
	label := a[0]
	if len(a) == 2 {
		if a[1] != "reset" {
			return fmt.Errorf("%q: the second word can only be reset", a[1])
		}
		reset = true
		label += " reset"
	}
	pick, ok := m.strat.Select(m.info, latency.PickInfo{LastBroker: brokerArg(a[0]), ResetIndex: reset})
	m.printf("select %s -> %s", label, queueRefOrNull(pick.Queue, ok))
	return nil
}

func queueRefOrNull(q *route.MessageQueue, ok bool) string {
	if !ok {
		return "null"
	}
	return q.String()
}

func (m *machine) opTPSelect(a []string) error {
	if err := m.needRoute(); err != nil {
		return err
	}
	q, ok := latency.SelectAvoiding(m.info, brokerArg(a[0]))
	m.printf("tpselect %s -> %s", a[0], queueRefOrNull(q, ok))
	return nil
}

func (m *machine) opUpdate(a []string) error {
	lat, err := parseMillis(a[1])
	if err != nil {
		return err
	}
	iso, err := parseBool(a[2])
	if err != nil {
		return err
	}
	reach := true
	if len(a) == 4 {
		if reach, err = parseBool(a[3]); err != nil {
			return err
		}
	}
	if err := m.consultTable(); err != nil {
		return err
	}
	m.strat.Update(a[0], lat, iso, reach)
	return nil
}

func (m *machine) opLFTUpdate(a []string) error {
	lat, err := parseMillis(a[1])
	if err != nil {
		return err
	}
	dur, err := parseMillis(a[2])
	if err != nil {
		return err
	}
	reach := true
	if len(a) == 4 {
		if reach, err = parseBool(a[3]); err != nil {
			return err
		}
	}
	m.strat.FaultTolerance().Update(a[0], lat, dur, reach)
	return nil
}

func (m *machine) opAvailable(a []string) error {
	m.printf("available %s = %t", a[0], m.strat.FaultTolerance().IsAvailable(a[0]))
	return nil
}

func (m *machine) opReachable(a []string) error {
	m.printf("reachable %s = %t", a[0], m.strat.FaultTolerance().IsReachable(a[0]))
	return nil
}

func (m *machine) opRemove(a []string) error {
	m.strat.FaultTolerance().Remove(a[0])
	return nil
}

func (m *machine) opPick([]string) error {
	b, ok := m.strat.FaultTolerance().PickLeastBad()
	if !ok {
		b = "null"
	}
	m.printf("pickOneAtLeast = %s", b)
	return nil
}

func (m *machine) opWorst(a []string) error {
	v, err := parseInt32(a[0])
	if err != nil {
		return err
	}
	m.strat.Table().WorstIndex().Store(v)
	return nil
}

func (m *machine) opResolve(a []string) error {
	if a[1] == "null" {
		m.resolve[a[0]] = ""
	} else {
		m.resolve[a[0]] = a[1]
	}
	return nil
}

func (m *machine) opProbe(a []string) error {
	b, err := parseBool(a[1])
	if err != nil {
		return err
	}
	m.probes[a[0]] = b
	return nil
}

func (m *machine) opDetectRound([]string) error {
	_, err := m.strat.DetectRound(context.Background())
	return err
}

func (m *machine) opItems([]string) error {
	items := m.strat.FaultTolerance().Items()
	if len(items) == 0 {
		m.printf("items -> []")
		return nil
	}
	parts := make([]string, len(items))
	for i, it := range items {
		s := fmt.Sprintf("[%s latency=%d until=%d", it.Broker, it.Latency.Milliseconds(), it.IsolatedUntil.UnixMilli())
		if m.mode == latency.ModeV5 {
			s += fmt.Sprintf(" reachable=%t", it.Reachable)
		}
		parts[i] = s + "]"
	}
	m.printf("items -> %s", strings.Join(parts, " "))
	return nil
}
