package sim

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// yamlField maps a YAML field of a scenario to the struct field it decodes
// into.
type yamlField struct{ key, field string }

// The fields Scenario.YAML writes, per struct, in the order the decoder
// knows them (TestScenarioYAMLFields holds these lists to the decoder's
// and to the structs: a field added to either must be added here).
var (
	scenarioYAML = []yamlField{{"name", "Name"}, {"duration", "Duration"}, {"seed", "Seed"}, {"load", "Load"},
		{"senders", "Senders"}, {"rate", "Rate"}, {"send_timeout", "SendTimeout"}, {"producers", "Producers"},
		{"route_poll", "RoutePoll"}, {"brokers", "Brokers"}, {"events", "Events"}}
	brokerYAML = []yamlField{{"name", "Name"}, {"queues", "Queues"}, {"latency", "Latency"}, {"capacity", "Capacity"},
		{"queue_wait", "QueueWait"}, {"joins", "Joins"}}
	latencyYAML = []yamlField{{"median", "Median"}, {"p99", "P99"}}
	eventYAML   = []yamlField{{"broker", "Broker"}, {"at", "At"}, {"for", "For"}, {"state", "State"}, {"latency", "Latency"},
		{"rate", "Rate"}, {"code", "Code"}, {"period", "Period"}, {"length", "Length"}, {"probe", "Probe"}}
)

// yamlFieldsOf returns the fields written for a struct type.
func yamlFieldsOf(t reflect.Type) []yamlField {
	switch t {
	case reflect.TypeFor[Scenario]():
		return scenarioYAML
	case reflect.TypeFor[Broker]():
		return brokerYAML
	case reflect.TypeFor[Latency]():
		return latencyYAML
	case reflect.TypeFor[Event]():
		return eventYAML
	}
	return nil
}

// YAML returns the scenario as a YAML scenario file that Parse reads back
// into an equal Scenario (durations as Go duration strings, numbers with
// every digit they need, fields at their zero value left out), so running
// the file replays the scenario's run exactly. header, when not empty, is
// written first as comment lines.
func (s *Scenario) YAML(header string) []byte {
	var b strings.Builder
	if header != "" {
		for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
			b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	v := reflect.ValueOf(s).Elem()
	for _, f := range scenarioYAML {
		fv := v.FieldByName(f.field)
		if fv.IsZero() {
			continue
		}
		if fv.Kind() == reflect.Slice {
			b.WriteString(f.key + ":\n")
			for i := range fv.Len() {
				b.WriteString("  - " + yamlValue(fv.Index(i)) + "\n")
			}
			continue
		}
		b.WriteString(f.key + ": " + yamlValue(fv) + "\n")
	}
	return []byte(b.String())
}

// plainYAML matches the strings written without quotes: names that no YAML
// reader takes for a number, a boolean or null.
var plainYAML = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._:-]*$`)

// yamlValue writes one value: a flow mapping for a struct.
func yamlValue(v reflect.Value) string {
	if v.Type() == reflect.TypeFor[time.Duration]() {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		switch strings.ToLower(s) {
		case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
			return strconv.Quote(s)
		}
		if plainYAML.MatchString(s) {
			return s
		}
		return strconv.Quote(s)
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Struct:
		var parts []string
		for _, f := range yamlFieldsOf(v.Type()) {
			fv := v.FieldByName(f.field)
			if !fv.IsZero() {
				parts = append(parts, f.key+": "+yamlValue(fv))
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	// A kind no field has yet: quoted, so Parse refuses it by name rather
	// than reading something else (TestScenarioYAMLRoundTrip catches it).
	return strconv.Quote(fmt.Sprint(v.Interface()))
}
