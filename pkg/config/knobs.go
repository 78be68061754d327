package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqfault/mqfault/internal/input/suggest"
	"github.com/mqfault/mqfault/pkg/latency"
)

// EnvPrefix starts every environment variable of a knob.
const EnvPrefix = "MQFAULT_"

// The meta keys: they choose what is loaded rather than set a knob.
const (
	presetKey = "preset" // file key and MQFAULT_PRESET: the preset under the rest
	configKey = "config" // MQFAULT_CONFIG: the file Load reads when given no path
)

// knobs is the one table of knobs. To add a knob: add its field to
// latency.Config, producer.Config or Config (with its value in the presets),
// then one line here; a knob of a latency policy past the reference is a
// line of that policy's registry entry instead (latency.Policies), which
// policyKnobs turns into the table's lines. Its file key, environment
// variable, Encode line, Knobs entry and error messages all come from this
// line; the field it binds is found from the binding itself (fieldPath; a
// policy knob's is its registry entry's Field, "Backoff.Max"), so the range
// errors of the sub-config's Validate, which name the field, name the knob
// too.
var knobs = slices.Concat([]knob{
	modeKnob("mode", "whose decisions to reproduce: v5 (RocketMQ 5.3.3) or v4 (4.9.8)",
		func(c *Config) *latency.Mode { return &c.Strategy.Mode }),
	boolKnob("fault_tolerance", "latency fault tolerance on or off (sendLatencyFaultEnable)",
		func(c *Config) *bool { return &c.Strategy.FaultTolerance }),
	boolKnob("detector", "the background detector on or off (startDetectorEnable; v5 only)",
		func(c *Config) *bool { return &c.Strategy.Detector }),
	durationKnob("detect_interval", "a broker is probed at most once per interval",
		func(c *Config) *time.Duration { return &c.Strategy.DetectInterval }),
	durationKnob("detect_timeout", "the timeout of one probe",
		func(c *Config) *time.Duration { return &c.Strategy.DetectTimeout }),
	durationKnob("detect_period", "how often the detector runs a round",
		func(c *Config) *time.Duration { return &c.Strategy.DetectPeriod }),
	intKnob("detect_parallel", "how many probes of one round run at once (1: the reference's one by one)",
		func(c *Config) *int { return &c.Strategy.DetectParallel }),
	durationsKnob("durations", "the duration table: thresholds;isolations (two comma-separated columns), or default for the mode's",
		func(c *Config) *latency.DurationTable { return &c.Strategy.Durations }),
	// The policies past the reference: one knob per setting of each
	// policy of latency's registry (latency.Policies), in its order.
}, policyKnobs(), []knob{
	intKnob("retry_times", "retries of a sync send after its first attempt (retryTimesWhenSendFailed)",
		func(c *Config) *int { return &c.Producer.RetryTimes }),
	intKnob("async_retry_times", "retries of an async send (retryTimesWhenSendAsyncFailed)",
		func(c *Config) *int { return &c.Producer.AsyncRetryTimes }),
	codesKnob("retry_codes", "broker response codes a sync send retries after: a list, default for the mode's, or none",
		func(c *Config) *[]int { return &c.Producer.RetryCodes }),
	durationKnob("timeout", "a send's whole budget, retries included (sendMsgTimeout)",
		func(c *Config) *time.Duration { return &c.Producer.Timeout }),
	durationKnob("max_timeout_per_request", "caps one attempt's timeout while another remains (sendMsgMaxTimeoutPerRequest); 0 is off",
		func(c *Config) *time.Duration { return &c.Producer.MaxTimeoutPerRequest }),
	boolKnob("retry_another_broker", "retry a sync send answered with a status other than SEND_OK on another broker",
		func(c *Config) *bool { return &c.Producer.RetryAnotherBrokerWhenNotStoreOK }),
	intKnob("async_max_in_flight", "bound on async sends in flight (backPressureForAsyncSendNum); 0 is none",
		func(c *Config) *int { return &c.Producer.AsyncMaxInFlight }),
	bytesKnob("async_max_bytes", "bound on body bytes of async sends in flight, e.g. 100MiB (backPressureForAsyncSendSize); 0 is none",
		func(c *Config) *int64 { return &c.Producer.AsyncMaxBytes }),
	boolKnob("async_fail_fast", "an async send over a bound fails at once instead of waiting for room",
		func(c *Config) *bool { return &c.Producer.AsyncFailFast }),
	floatKnob("retry_budget", "0.2", "retry budget: failed retries at most this share of a producer's sends (plus retry_budget_floor a second) over 10 s, a retry that found an answer given back; 0 is off (v5)",
		func(c *Config) *float64 { return &c.Producer.RetryBudget }),
	intKnob("retry_budget_floor", "retries a second the retry budget allows whatever the sends",
		func(c *Config) *int { return &c.Producer.RetryBudgetFloor }),
	floatKnob("room_wait", "0.01", "share of sync sends that may wait for room (until one attempt's share of their timeout is left) instead of ending for want of it, while waiting relieves the push-back; 0 is off (v5)",
		func(c *Config) *float64 { return &c.Producer.RoomWait }),
	durationKnob("route_refresh_interval", "how often every known topic's route is looked up again",
		func(c *Config) *time.Duration { return &c.Producer.RouteRefreshInterval }),
	durationKnob("log_interval", "least time between two log records of one kind about one broker; 0 logs all",
		func(c *Config) *time.Duration { return &c.LogInterval }),
	boolKnob("count_stages", "count picks by cascade stage (one atomic add per pick) for metrics",
		func(c *Config) *bool { return &c.CountStages }),
})

// policyKnobs returns a knob for every setting of every policy of
// latency's registry, bound to its field of Config.Strategy through the
// registry's Get and Set (a policy's settings are nil while it is off).
func policyKnobs() []knob {
	var out []knob
	for _, p := range latency.Policies() {
		for _, pk := range p.Knobs {
			switch pk.Get(latency.Config{}).(type) {
			case float64:
				out = append(out, policyKnob(pk, func(v *float64) value { return floatValue{v, pk.Example} }))
			case int:
				out = append(out, policyKnob(pk, func(v *int) value { return (*intValue)(v) }))
			case bool:
				out = append(out, policyKnob(pk, func(v *bool) value { return (*boolValue)(v) }))
			case time.Duration:
				out = append(out, policyKnob(pk, func(v *time.Duration) value { return (*durationValue)(v) }))
			default:
				panic("config: latency policy knob " + pk.Key + " has a kind the knob table does not know")
			}
		}
	}
	return out
}

// policyKnob is the knob of policy setting pk, its value parsed and
// written by the value kind of its type, T.
func policyKnob[T any](pk latency.PolicyKnob, kind func(*T) value) knob {
	return knob{name: pk.Key, field: "Strategy." + pk.Field, doc: pk.Doc,
		bind: func(c *Config) value { return policyValue[T]{c: &c.Strategy, pk: pk, kind: kind} }}
}

// policyValue is a policy setting of one Config: set parses into a T and
// hands it to the registry's Set, get formats the registry's Get.
type policyValue[T any] struct {
	c    *latency.Config
	pk   latency.PolicyKnob
	kind func(*T) value
}

func (v policyValue[T]) set(s string) error {
	var x T
	if err := v.kind(&x).set(s); err != nil {
		return err
	}
	v.pk.Set(v.c, x)
	return nil
}

func (v policyValue[T]) get() string {
	x := v.pk.Get(*v.c).(T)
	return v.kind(&x).get()
}

// knob binds one setting to its name, documentation and field.
type knob struct {
	name  string
	field string // the field's path in Config ("Strategy.DetectTimeout"), from fieldPath
	doc   string
	shape shape
	bind  func(c *Config) value
}

// shape says which forms a knob's value may take in a file.
type shape uint8

const (
	scalar  shape = iota // one value
	list                 // a comma-separated list, or a file list
	columns              // two lists separated by ';', or a file mapping of two lists
)

// value is a knob bound to one Config: set parses the value as written in an
// environment variable (or a file scalar), get formats it the same way.
type value interface {
	set(s string) error
	get() string
}

// Knob describes one knob for documentation and tools.
type Knob struct {
	// Name is the knob's key in a file ("detect_timeout").
	Name string
	// Env is its environment variable ("MQFAULT_DETECT_TIMEOUT").
	Env string
	// Doc says what it does, in one line.
	Doc string
}

// Knobs lists every knob in the order of the table (and of Encode's output).
func Knobs() []Knob {
	out := make([]Knob, len(knobs))
	for i, k := range knobs {
		out[i] = Knob{Name: k.name, Env: EnvName(k.name), Doc: k.doc}
	}
	return out
}

// EnvName returns the environment variable of the knob called name.
func EnvName(name string) string { return EnvPrefix + strings.ToUpper(name) }

func lookupKnob(name string) (knob, bool) {
	for _, k := range knobs {
		if k.name == name {
			return k, true
		}
	}
	return knob{}, false
}

// Set sets the knob called name from its written form (as in an environment
// variable). An unknown knob or a value that does not parse is an *Error (a
// duration table with several problems gives one *Error each, joined);
// ranges are checked by Validate. On error c is unchanged.
func (c *Config) Set(name, s string) error {
	k, ok := lookupKnob(name)
	if !ok {
		return unknownKnob(name, s, "")
	}
	return join(c.apply(entry{knob: k, value: s}))
}

// Get returns the knob called name in its written form; ok is false when there
// is no such knob. Set(name, Get(name)) changes nothing, except for a duration
// table that is not a *latency.StepTable, which Get writes as "custom".
func (c Config) Get(name string) (s string, ok bool) {
	k, ok := lookupKnob(name)
	if !ok {
		return "", false
	}
	return k.bind(&c).get(), true
}

func unknownKnob(name, value, source string) *Error {
	reason := "no such knob"
	if near := nearest(name); near != "" {
		reason += " (did you mean " + near + "?)"
	}
	return &Error{Knob: name, Value: value, Source: source, Reason: reason}
}

// nearest returns the knob name closest to name by edit distance, if one is
// close enough to be a likely typo.
func nearest(name string) string {
	best, bestD := "", 3
	for _, k := range knobs {
		if d := suggest.Distance(strings.ToLower(name), k.name); d < bestD {
			best, bestD = k.name, d
		}
	}
	return best
}

// causeError carries an underlying error (a *latency.ConfigError) through a
// value's set, so Set can wrap it.
type causeError struct {
	msg   string
	cause error
}

func (e *causeError) Error() string { return e.msg }

func unwrapCause(err error) error {
	if ce, ok := err.(*causeError); ok {
		return ce.cause
	}
	return nil
}

// fieldPath returns the path in Config of the field ptr binds, such as
// "Strategy.DetectTimeout", found by address in a zero Config: the knob
// table binds each knob to its field once, by pointer, and the name the
// sub-configs' errors use comes from that binding.
func fieldPath[T any](ptr func(*Config) *T) string {
	var c Config
	addr := reflect.ValueOf(ptr(&c)).Pointer()
	path := findField(reflect.ValueOf(&c).Elem(), "", addr, reflect.TypeFor[T]())
	if path == "" {
		panic("config: a knob binds no field of Config")
	}
	return path
}

func findField(v reflect.Value, prefix string, addr uintptr, t reflect.Type) string {
	for i := range v.NumField() {
		sf, f := v.Type().Field(i), v.Field(i)
		if !sf.IsExported() {
			continue
		}
		if f.Addr().Pointer() == addr && f.Type() == t {
			return prefix + sf.Name
		}
		if f.Kind() == reflect.Struct {
			if p := findField(f, prefix+sf.Name+".", addr, t); p != "" {
				return p
			}
		}
	}
	return ""
}

// knobByField finds a knob by the field it binds ("Strategy.DetectTimeout").
var knobByField = func() map[string]knob {
	m := make(map[string]knob, len(knobs))
	for _, k := range knobs {
		m[k.field] = k
	}
	return m
}()

// knobOrder returns the position of the knob called name in the table, or
// len(knobs) for another name.
func knobOrder(name string) int {
	for i, k := range knobs {
		if k.name == name {
			return i
		}
	}
	return len(knobs)
}

// The value kinds. Each knob constructor binds a field through ptr.

func boolKnob(name, doc string, ptr func(*Config) *bool) knob {
	return knob{name: name, field: fieldPath(ptr), doc: doc, bind: func(c *Config) value { return (*boolValue)(ptr(c)) }}
}

type boolValue bool

func (v *boolValue) set(s string) error {
	switch strings.ToLower(s) {
	case "true", "t", "1", "on", "yes", "y":
		*v = true
	case "false", "f", "0", "off", "no", "n":
		*v = false
	default:
		return fmt.Errorf("must be true or false (also on/off, yes/no, 1/0)")
	}
	return nil
}

func (v *boolValue) get() string { return strconv.FormatBool(bool(*v)) }

func durationKnob(name, doc string, ptr func(*Config) *time.Duration) knob {
	return knob{name: name, field: fieldPath(ptr), doc: doc, bind: func(c *Config) value { return (*durationValue)(ptr(c)) }}
}

type durationValue time.Duration

func (v *durationValue) set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v = durationValue(d)
	return nil
}

func (v *durationValue) get() string { return time.Duration(*v).String() }

// parseDuration parses a Go duration; a bare 0 is allowed, any other number
// without a unit is refused rather than guessed.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return 0, fmt.Errorf("a duration needs a unit, such as 200ms or 3s")
		}
		return 0, fmt.Errorf("must be a duration such as 200ms or 3s")
	}
	return d, nil
}

// floatKnob binds a number; example is a valid value the parse error shows.
func floatKnob(name, example, doc string, ptr func(*Config) *float64) knob {
	return knob{name: name, field: fieldPath(ptr), doc: doc, bind: func(c *Config) value { return floatValue{ptr(c), example} }}
}

type floatValue struct {
	p       *float64
	example string
}

func (v floatValue) set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		if pct, ok := strings.CutSuffix(s, "%"); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(pct), 64); err == nil {
				return fmt.Errorf("must be a number such as %s, not a percentage (write %s as %s)", v.example, s, strconv.FormatFloat(f/100, 'g', -1, 64))
			}
		}
		return fmt.Errorf("must be a number such as %s", v.example)
	}
	*v.p = f
	return nil
}

func (v floatValue) get() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }

func intKnob(name, doc string, ptr func(*Config) *int) knob {
	return knob{name: name, field: fieldPath(ptr), doc: doc, bind: func(c *Config) value { return (*intValue)(ptr(c)) }}
}

type intValue int

func (v *intValue) set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return fmt.Errorf("must be a whole number (up to %d)", int32(^uint32(0)>>1))
	}
	*v = intValue(n)
	return nil
}

func (v *intValue) get() string { return strconv.Itoa(int(*v)) }

func bytesKnob(name, doc string, ptr func(*Config) *int64) knob {
	return knob{name: name, field: fieldPath(ptr), doc: doc, bind: func(c *Config) value { return (*bytesValue)(ptr(c)) }}
}

type bytesValue int64

var byteUnits = []struct {
	suffix string
	shift  uint
}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

func (v *bytesValue) set(s string) error {
	num, shift := s, uint(0)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, shift = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || (n != 0 && (n<<shift)>>shift != n) {
		return fmt.Errorf("must be a whole number of bytes, optionally with a unit B, KiB, MiB or GiB (such as 100MiB)")
	}
	*v = bytesValue(n << shift)
	return nil
}

func (v *bytesValue) get() string {
	n := int64(*v)
	for _, u := range byteUnits[:3] {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func modeKnob(name, doc string, ptr func(*Config) *latency.Mode) knob {
	return knob{name: name, field: fieldPath(ptr), doc: doc, bind: func(c *Config) value { return (*modeValue)(ptr(c)) }}
}

type modeValue latency.Mode

func (v *modeValue) set(s string) error {
	m := latency.Mode(strings.ToLower(s))
	if m == "" || !m.Valid() {
		return fmt.Errorf("must be %s", latency.ModeChoices())
	}
	*v = modeValue(m)
	return nil
}

func (v *modeValue) get() string {
	if *v == "" {
		return string(latency.Modes()[0])
	}
	return string(*v)
}

func codesKnob(name, doc string, ptr func(*Config) *[]int) knob {
	return knob{name: name, field: fieldPath(ptr), doc: doc, shape: list, bind: func(c *Config) value { return (*codesValue)(ptr(c)) }}
}

// codesValue is a list of response codes: nil is the mode's set ("default"),
// empty is none ("none").
type codesValue []int

func (v *codesValue) set(s string) error {
	switch strings.ToLower(s) {
	case "default":
		*v = nil
		return nil
	case "none", "":
		*v = []int{}
		return nil
	}
	parts := strings.Split(s, ",")
	codes := make([]int, 0, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil {
			return fmt.Errorf("item %d (%q) is not a response code: use whole numbers separated by commas, default, or none", i+1, strings.TrimSpace(p))
		}
		codes = append(codes, int(n))
	}
	*v = codes
	return nil
}

func (v *codesValue) get() string {
	if *v == nil {
		return "default"
	}
	if len(*v) == 0 {
		return "none"
	}
	parts := make([]string, len(*v))
	for i, n := range *v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func durationsKnob(name, doc string, ptr func(*Config) *latency.DurationTable) knob {
	return knob{name: name, field: fieldPath(ptr), doc: doc, shape: columns, bind: func(c *Config) value { return durationsValue{ptr(c)} }}
}

// durationsValue is a duration table written as its two columns,
// "50ms,100ms,550ms;0s,0s,2s" (thresholds;isolations), or "default" for the
// mode's own table (nil). A table without rows (";") is refused.
type durationsValue struct{ p *latency.DurationTable }

func (v durationsValue) set(s string) error {
	if strings.EqualFold(s, "default") {
		*v.p = nil
		return nil
	}
	cols := strings.Split(s, ";")
	if len(cols) != 2 {
		return fmt.Errorf("must be two comma-separated columns, thresholds;isolations (such as 550ms,1800ms;2s,5s), or default")
	}
	var parsed [2][]time.Duration
	for c, col := range cols {
		if strings.TrimSpace(col) == "" {
			continue
		}
		for i, p := range strings.Split(col, ",") {
			d, err := parseDuration(strings.TrimSpace(p))
			if err != nil {
				return fmt.Errorf("%s item %d (%q): %v", [2]string{"threshold", "isolation"}[c], i+1, strings.TrimSpace(p), err)
			}
			parsed[c] = append(parsed[c], d)
		}
	}
	if len(parsed[0]) == 0 && len(parsed[1]) == 0 {
		// A table without rows isolates no broker, whatever it answers:
		// fault tolerance silently off is never what such a value meant.
		return errors.New("the table is empty, so no broker would ever be isolated: give at least one threshold and its isolation (such as 550ms;30s), or default")
	}
	t, err := latency.NewStepTable(parsed[0], parsed[1])
	if err != nil {
		return columnErrors(err)
	}
	*v.p = t
	return nil
}

func (v durationsValue) get() string {
	switch t := (*v.p).(type) {
	case nil:
		return "default"
	case *latency.StepTable:
		lm, na := t.Columns()
		return joinDurations(lm) + ";" + joinDurations(na)
	}
	return "custom"
}

func joinDurations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// columnKeys are the keys of a duration table written as a file mapping.
var columnKeys = []string{"latency_max", "not_available"}

// columnOf names latency.NewStepTable's arguments, which its errors report
// as their Field, by the columns' keys.
var columnOf = map[string]string{"latencyMax": columnKeys[0], "notAvailable": columnKeys[1]}

// columnErrors restates latency.NewStepTable's problems (one
// *latency.ConfigError each) in the knob's words: "latency_max item 2
// (100ms): thresholds must be strictly ascending (the one before is 1s)".
func columnErrors(err error) error {
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	out := make([]error, len(parts))
	for i, part := range parts {
		ce, ok := part.(*latency.ConfigError)
		if !ok {
			out[i] = part
			continue
		}
		name := ce.Field
		if col, ok := columnOf[ce.Field]; ok {
			name = col
		}
		if ce.Item > 0 {
			name += " item " + strconv.Itoa(ce.Item)
		}
		reason := ce.Reason
		if col, ok := columnOf[ce.Related]; ok {
			reason = strings.ReplaceAll(reason, ce.Related, col)
		}
		out[i] = &causeError{msg: fmt.Sprintf("%s (%v): %s", name, ce.Value, reason), cause: ce}
	}
	return errors.Join(out...)
}

func isColumnKey(k string) bool { return slices.Contains(columnKeys, k) }
