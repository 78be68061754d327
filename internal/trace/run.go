package trace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

// Topic is the one topic a trace works on.
const Topic = "T"

// StartMillis is where a trace's clock starts, in milliseconds.
const StartMillis = 1000000

// MaxLineBytes bounds one line of a trace.
const MaxLineBytes = 1 << 20

// LineError is a problem of one line of a trace: a malformed line, an
// operation its mode lacks (a *ModeError), a line that cannot run in the
// trace's state (no route yet, an invalid duration table).
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return "line " + strconv.Itoa(e.Line) + ": " + e.Err.Error() }
func (e *LineError) Unwrap() error { return e.Err }

// ModeError is an operation that only another mode has, such as pick
// (v4) in a v5 trace.
type ModeError struct {
	Op   string
	Mode latency.Mode // the trace's mode
	Want latency.Mode // the mode that has Op
}

func (e *ModeError) Error() string {
	return e.Op + ": a " + string(e.Want) + " operation, not available in mode " + string(e.Mode)
}

// maxLineErrors bounds the lines Run reports as malformed before it stops
// listing them.
const maxLineErrors = 50

// outBuffer is how much output Run holds before it writes it.
const outBuffer = 64 << 10

// Run reads a trace from r and runs it line by line as it reads, in mode
// (a registered latency mode: latency.Modes), writing its output to w. It
// holds one line of the trace at a time, so what it needs is bounded by the
// trace's largest operation (and the state the trace builds), not by its
// length.
// Output is buffered: what a line prints is written before Run waits for
// more input and when it returns, so a trace fed through a pipe or typed at
// a terminal is answered line by line.
//
// The first line that is malformed (an unknown operation, one its mode
// lacks, a wrong number of arguments, an argument that does not parse) or
// cannot run in the trace's state (no route yet, an invalid duration table,
// the clock past its range) stops the run; what the lines before it printed
// stays printed. Run then reads the rest of the trace only to check each
// line's syntax, and the error lists every problem in the order of the
// lines, a *LineError each (at most 50, then one saying there are more),
// joined, one per line. A line longer than MaxLineBytes is one of them. A
// read error, or an error writing to w, is returned as it is, and ends Run
// at once.
func Run(r io.Reader, w io.Writer, mode latency.Mode) error {
	sink := &firstError{w: w}
	out := bufio.NewWriterSize(sink, outBuffer)
	m, err := newMachine(out, mode)
	if err != nil {
		return err
	}
	defer m.close()
	in := newLineReader(r)
	var problems []error
	for n := 1; ; n++ {
		if in.empty() { // the next read may wait: show what is done
			if err := out.Flush(); err != nil {
				return sink.or(err)
			}
		}
		text, err := in.next()
		if err == io.EOF {
			break
		}
		var lerr error
		switch {
		case err == errLineTooLong:
			lerr = fmt.Errorf("line longer than %d bytes", MaxLineBytes)
		case err != nil:
			return err
		case problems != nil: // stopped: the rest is only checked
			lerr = m.check(text)
		default:
			lerr = m.exec(text)
		}
		if sink.err != nil {
			return sink.err
		}
		if lerr == nil {
			continue
		}
		if len(problems) == maxLineErrors {
			problems = append(problems, &LineError{Line: n, Err: fmt.Errorf("this line and others after it have problems too (only the first %d are listed)", maxLineErrors)})
			break
		}
		problems = append(problems, &LineError{Line: n, Err: lerr})
	}
	if err := out.Flush(); err != nil {
		return sink.or(err)
	}
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return problems[0]
	}
	return errors.Join(problems...)
}

// firstError is a writer that remembers the first error its writer
// returned.
type firstError struct {
	w   io.Writer
	err error
}

func (f *firstError) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil && f.err == nil {
		f.err = err
	}
	return n, err
}

// or returns the writer's own error, else err.
func (f *firstError) or(err error) error {
	if f.err != nil {
		return f.err
	}
	return err
}

var errLineTooLong = errors.New("line too long")

// lineReader reads a trace's lines one at a time into one buffer, which
// grows to the longest line read (at most MaxLineBytes and a read's worth).
type lineReader struct {
	br  *bufio.Reader
	buf []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// empty reports whether the next line must be read from the underlying
// reader, which may block.
func (l *lineReader) empty() bool { return l.br.Buffered() == 0 }

// next returns the next line without its line end ("\n" or "\r\n") and
// without its comment; io.EOF after the last line. A line longer than
// MaxLineBytes is skipped, and errLineTooLong returned for it.
func (l *lineReader) next() (string, error) {
	l.buf = l.buf[:0]
	tooLong, read := false, false
	for {
		chunk, err := l.br.ReadSlice('\n')
		read = read || len(chunk) > 0
		if !tooLong {
			if len(l.buf)+len(chunk) > MaxLineBytes+2 { // the line and a line end
				tooLong, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			if !read {
				return "", io.EOF
			}
		} else if err != nil {
			return "", err
		}
		break
	}
	line := l.buf
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if tooLong || len(line) > MaxLineBytes {
		return "", errLineTooLong
	}
	if i := bytes.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	return string(line), nil
}

// machine is the state a trace runs on.
type machine struct {
	out   *bufio.Writer
	mode  latency.Mode
	spec  latency.ModeInfo // what the mode has
	clock *clock.Manual
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

func newMachine(w *bufio.Writer, mode latency.Mode) (*machine, error) {
	spec, ok := mode.Info()
	if !ok {
		return nil, fmt.Errorf("unknown mode %q (want %s)", mode, latency.ModeChoices())
	}
	m := &machine{
		out:     w,
		mode:    spec.Mode,
		spec:    spec,
		clock:   clock.NewManual(time.UnixMilli(StartMillis)),
		rand:    &queuedRandom{},
		resolve: map[string]string{},
		probes:  map[string]bool{},
	}
	cfg := latency.Reference5()
	cfg.Mode = spec.Mode
	resolver := probe.ResolverFunc(func(b string) (string, bool) {
		a, set := m.resolve[b]
		if !set {
			return "addr-" + b, true
		}
		return a, a != ""
	})
	detector := probe.ServiceDetectorFunc(func(_ context.Context, addr string) error {
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
	steps, ok := s.Durations().(*latency.StepTable)
	if !ok {
		_ = s.Close()
		return nil, fmt.Errorf("mode %s: its duration table is not a step table", spec.Mode)
	}
	m.latencyMax, m.notAvailable = steps.Columns()
	m.send = defaultSendSettings(spec)
	return m, nil
}

func defaultSendSettings(spec latency.ModeInfo) sendSettings {
	s := sendSettings{retryTimes: 2, timeout: 3000 * time.Millisecond, retryCodes: map[int]bool{}}
	for _, c := range spec.Send.RetryCodes {
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
	if !sp.needs.in(m.spec) {
		if sp.needs == resetIndexOp { // accepted and ignored where picks never reset the index
			return op, nil, nil, nil
		}
		return op, nil, nil, &ModeError{Op: op, Mode: m.mode, Want: modeWith(sp.needs)}
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
	min, max int     // argument count bounds; max -1 is unbounded
	needs    feature // what the trace's mode must have for the operation
	usage    string
	run      func(m *machine, args []string) error
}

// feature is what a mode has that some operations need (latency.ModeInfo).
type feature uint8

const (
	anyMode      feature = iota
	detectorOp           // the mode has a detector
	reachableOp          // the mode's table records reachability
	leastBadOp           // the mode's cascade ends in the least-bad broker (pickOneAtLeast)
	resetIndexOp         // the mode's sync retries reset the index; in another mode accepted and ignored
)

// in reports whether a mode with spec has f.
func (f feature) in(spec latency.ModeInfo) bool {
	switch f {
	case detectorOp:
		return spec.Detector
	case reachableOp:
		return spec.Reachability
	case leastBadOp:
		return spec.LeastBad
	case resetIndexOp:
		return spec.Send.ResetIndex
	}
	return true
}

// modeWith returns the first registered mode that has f.
func modeWith(f feature) latency.Mode {
	for _, mode := range latency.Modes() {
		if spec, _ := mode.Info(); f.in(spec) {
			return mode
		}
	}
	return ""
}

var ops map[string]opSpec

func init() {
	ops = map[string]opSpec{
		"clock":                {1, 1, anyMode, "usage: clock MS", (*machine).opClock},
		"advance":              {1, 1, anyMode, "usage: advance MS", (*machine).opAdvance},
		"echo":                 {0, -1, anyMode, "", (*machine).opEcho},
		"set":                  {1, -1, anyMode, "usage: set retryTimes N | retryAnotherBroker true|false | timeout MS | retryCodes C...", (*machine).opSet},
		"route":                {1, 1, anyMode, "usage: route name:queues[:perm][:nomaster],...", (*machine).opRoute},
		"orderroute":           {1, 1, anyMode, "usage: orderroute broker:count;...", (*machine).opOrderRoute},
		"index":                {1, 1, anyMode, "usage: index N", (*machine).opIndex},
		"dumpindex":            {0, 0, anyMode, "takes no arguments", (*machine).opDumpIndex},
		"resetrand":            {1, -1, resetIndexOp, "usage: resetrand V...", (*machine).opResetRand},
		"enable":               {1, 1, anyMode, "usage: enable true|false", (*machine).opEnable},
		"detector":             {1, 1, detectorOp, "usage: detector true|false", (*machine).opDetector},
		"latencyMax":           {0, -1, anyMode, "", (*machine).opLatencyMax},
		"notAvailableDuration": {0, -1, anyMode, "", (*machine).opNotAvailable},
		"select":               {1, 2, anyMode, "usage: select LAST|- [reset]", (*machine).opSelect},
		"tpselect":             {1, 1, anyMode, "usage: tpselect LAST|-", (*machine).opTPSelect},
		"update":               {3, 4, anyMode, "usage: update BROKER LATENCY ISOLATION [REACHABLE]", (*machine).opUpdate},
		"lftupdate":            {3, 4, anyMode, "usage: lftupdate BROKER LATENCY DURATION [REACHABLE]", (*machine).opLFTUpdate},
		"available":            {1, 1, anyMode, "usage: available BROKER", (*machine).opAvailable},
		"reachable":            {1, 1, reachableOp, "usage: reachable BROKER", (*machine).opReachable},
		"remove":               {1, 1, anyMode, "usage: remove BROKER", (*machine).opRemove},
		"pick":                 {0, 0, leastBadOp, "takes no arguments", (*machine).opPick},
		"worst":                {1, 1, leastBadOp, "usage: worst N", (*machine).opWorst},
		"resolve":              {2, 2, detectorOp, "usage: resolve BROKER ADDR|null", (*machine).opResolve},
		"probe":                {2, 2, detectorOp, "usage: probe ADDR true|false", (*machine).opProbe},
		"detectround":          {0, 0, detectorOp, "takes no arguments", (*machine).opDetectRound},
		"items":                {0, 0, anyMode, "takes no arguments", (*machine).opItems},
		"send":                 {1, -1, anyMode, "usage: send SYNC|ASYNC|ONEWAY OUTCOME...", (*machine).opSend},
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

// parseSignedMillis is parseMillis for a value the reference takes whatever
// its sign: update's latency, lftupdate's latency and duration.
func parseSignedMillis(s string) (time.Duration, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a decimal number", s)
	}
	if v > math.MaxInt64/int64(time.Millisecond) || v < math.MinInt64/int64(time.Millisecond) {
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
	m.info = nil // the old route can go while the new one is built
	info, err := route.NewPublishInfo(Topic, data, route.WithRandom(m.rand))
	if err != nil {
		return err
	}
	m.info = info
	m.rand.queue = nil // a new route, a new index: queued reset values are gone
	return nil
}

// printRoute prints the route's queues straight to the output, which
// writes them out as its buffer fills: a route of a million queues is never
// held as text.
func (m *machine) printRoute(suffix string) {
	w := m.out
	w.WriteString("route -> [")
	var num [20]byte
	for i := range m.info.Len() {
		if i > 0 {
			w.WriteByte(' ')
		}
		q := m.info.QueueRef(i)
		w.WriteString(q.BrokerName)
		w.WriteByte(':')
		w.Write(strconv.AppendInt(num[:0], int64(q.QueueID), 10))
	}
	w.WriteString("]")
	w.WriteString(suffix)
	w.WriteByte('\n')
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
	v, err := parseInt32(a[0])
	if err != nil {
		return err
	}
	if err := m.needRoute(); err != nil {
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
	if err := int32Args(a); err != nil {
		return err
	}
	for _, s := range a {
		v, _ := parseInt32(s)
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
	if m.info.Len() == 0 {
		m.pickEmpty(reset)
		m.printf("select %s -> null", label)
		return nil
	}
	pick, ok := m.strat.Select(m.info, latency.PickInfo{LastBroker: brokerArg(a[0]), ResetIndex: reset})
	m.printf("select %s -> %s", label, queueRefOrNull(pick.Queue, ok))
	return nil
}

// pickEmpty moves the route's index as the reference does when it picks
// from a route without queues, up to the division by zero that ends its
// pick (printed as null); Strategy.Select answers no pick and moves nothing.
// 5.3.3, fault tolerance on: the reset if asked for, then the filtered
// passes return at once and the last, unfiltered pick takes one next(). Off
// (and 4.9.8 off): one next(). 4.9.8 on: the scan takes one next(), then the
// least-bad broker: one whose queue data is writable costs the least-bad
// pick's own next(), and one without (or none) is removed from the fault
// table; then the last pick takes one next().
func (m *machine) pickEmpty(reset bool) {
	idx := m.info.Index()
	on := m.strat.FaultToleranceEnabled()
	switch {
	case m.spec.LeastBad && on:
		idx.Next()
		ft := m.strat.Table()
		if b, ok := ft.PickLeastBad(); ok && m.info.WriteQueueNums(b) > 0 {
			idx.Next()
		} else if ok {
			ft.Remove(b)
		}
	case m.spec.Send.ResetIndex && on && reset:
		m.info.ResetIndex()
	}
	idx.Next()
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
	if m.info.Len() == 0 { // the reference takes one next(), then divides by zero
		m.info.Index().Next()
		m.printf("tpselect %s -> null", a[0])
		return nil
	}
	q, ok := latency.SelectAvoiding(m.info, brokerArg(a[0]))
	m.printf("tpselect %s -> %s", a[0], queueRefOrNull(q, ok))
	return nil
}

func (m *machine) opUpdate(a []string) error {
	lat, err := parseSignedMillis(a[1])
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
	if lat < 0 && m.strat.FaultToleranceEnabled() {
		m.updateNegative(a[0], lat, iso, reach)
		return nil
	}
	m.strat.Update(a[0], lat, iso, reach)
	return nil
}

// updateNegative is the reference's update with a negative latency, which
// Strategy.Update counts as 0: the latency is stored as it is, and looked
// up in the duration table as it is (below every threshold, so it isolates
// nothing unless isolation charges the mode's isolation latency).
func (m *machine) updateNegative(broker string, lat time.Duration, isolation, reachable bool) {
	lookup := lat
	if isolation {
		lookup = m.spec.IsolationLatency
	}
	m.strat.Table().Update(broker, lat, m.strat.Durations().Isolation(lookup), reachable)
}

func (m *machine) opLFTUpdate(a []string) error {
	lat, err := parseSignedMillis(a[1])
	if err != nil {
		return err
	}
	dur, err := parseSignedMillis(a[2])
	if err != nil {
		return err
	}
	reach := true
	if len(a) == 4 {
		if reach, err = parseBool(a[3]); err != nil {
			return err
		}
	}
	m.strat.Table().Update(a[0], lat, dur, reach)
	return nil
}

func (m *machine) opAvailable(a []string) error {
	m.printf("available %s = %t", a[0], m.strat.Table().IsAvailable(a[0]))
	return nil
}

func (m *machine) opReachable(a []string) error {
	m.printf("reachable %s = %t", a[0], m.strat.Table().IsReachable(a[0]))
	return nil
}

func (m *machine) opRemove(a []string) error {
	m.strat.Table().Remove(a[0])
	return nil
}

func (m *machine) opPick([]string) error {
	b, ok := m.strat.Table().PickLeastBad()
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
	items := m.strat.Table().Items()
	if len(items) == 0 {
		m.printf("items -> []")
		return nil
	}
	parts := make([]string, len(items))
	for i, it := range items {
		s := fmt.Sprintf("[%s latency=%d until=%d", it.Broker, it.Latency.Milliseconds(), it.IsolatedUntil.UnixMilli())
		if m.spec.Reachability {
			s += fmt.Sprintf(" reachable=%t", it.Reachable)
		}
		parts[i] = s + "]"
	}
	m.printf("items -> %s", strings.Join(parts, " "))
	return nil
}
