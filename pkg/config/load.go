package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mqfault/mqfault/internal/input/yamldoc"
)

// MaxFileSize bounds the configuration file Load and Decode accept.
const MaxFileSize = 1 << 20

// Load returns the configuration a program runs with, from the file at path
// and the process environment: see LoadEnv.
func Load(path string) (Config, error) { return LoadEnv(path, os.Environ()) }

// LoadEnv returns the configuration given by a file and an environment
// (a list of "KEY=value", as os.Environ returns):
//
//  1. the preset named by MQFAULT_PRESET, else by the file's preset key,
//     else DefaultConfig;
//  2. the file at path over it (YAML or JSON; see Decode). With path "" the
//     file named by MQFAULT_CONFIG is read, if that is set; otherwise none;
//  3. every MQFAULT_<KNOB> variable over that (a variable set to the empty
//     string counts as unset);
//  4. Validate.
//
// It reports every problem at once: the error is one *Error, or when there
// are several, one *Error per problem joined with errors.Join (errors.As
// finds the first; the message has one problem per line), the file's in the
// order of its lines, then the variables'. Each names the knob, the value and
// its source (the variable, or the file and line). A variable starting with
// MQFAULT_ that names no knob but is within two edits of one
// (MQFAULT_TIMEOUTS) is an error too, so a typo is not silently ignored;
// others (MQFAULT_PLUGIN, the plugin handshake's) are left alone. A file
// that cannot be read or does not parse is reported alone.
func LoadEnv(path string, environ []string) (Config, error) {
	env, errs := parseEnv(environ)
	if path == "" {
		path = env.configPath
	}
	var file parsedFile
	if path != "" {
		data, err := readFile(path)
		if err != nil {
			return Config{}, err
		}
		var ferrs []error
		if file, ferrs = parseFile(data, path); file.fatal {
			return Config{}, join(ferrs)
		}
		errs = append(ferrs, errs...)
	}
	preset := file.preset
	if env.preset != nil {
		preset = env.preset
	}
	cfg, err := presetFor(preset, DefaultConfig())
	if err != nil {
		errs = append(errs, err)
	}
	origins := make(map[string]entry) // where each knob's value was last written
	failed := make(map[string]bool)   // knobs whose value did not parse
	for _, e := range slices.Concat(file.entries, env.entries) {
		if aerrs := cfg.apply(e); aerrs != nil {
			errs = append(errs, aerrs...)
			failed[e.knob.name] = true
			continue
		}
		origins[e.knob.name] = e
	}
	for _, ke := range cfg.validate() {
		if failed[ke.Knob] || failed[ke.related] {
			continue // a knob left at its preset value by a problem already reported
		}
		if e, ok := origins[ke.Knob]; ok {
			ke.Value, ke.Source = e.value, e.source
		}
		errs = append(errs, ke)
	}
	if len(errs) > 0 {
		sortProblems(errs, path)
		return Config{}, join(errs)
	}
	return cfg, nil
}

// sortProblems orders problems as a user reads them: the file's by line,
// then the environment's in the order of the knob table, then the rest
// (a value that is wrong only with another, both from presets).
func sortProblems(errs []error, path string) {
	key := func(err error) (group, order int) {
		e, ok := err.(*Error)
		switch {
		case !ok:
			return 3, 0
		case path != "" && strings.HasPrefix(e.Source, path):
			line, _ := strconv.Atoi(strings.TrimPrefix(e.Source, path+":"))
			return 0, line
		case strings.HasPrefix(e.Source, EnvPrefix) || strings.HasPrefix(e.Knob, EnvPrefix):
			return 1, knobOrder(strings.ToLower(strings.TrimPrefix(e.Source, EnvPrefix)))
		}
		return 2, knobOrder(e.Knob)
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		ga, oa := key(a)
		gb, ob := key(b)
		return cmp.Or(cmp.Compare(ga, gb), cmp.Compare(oa, ob))
	})
}

// join returns nil, the one error, or every error joined, one per line.
func join(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// presetFor returns the preset p names, or def when p is nil.
func presetFor(p *metaValue, def Config) (Config, error) {
	if p == nil {
		return def, nil
	}
	cfg, err := Preset(p.value)
	if err != nil {
		err.(*Error).Source = p.source
		return def, err
	}
	return cfg, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Source: path, Reason: "cannot read the configuration file: " + err.Error(), Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{Source: path, Reason: "cannot read the configuration file: " + err.Error(), Err: err}
	}
	return data, nil
}

// Decode applies a configuration document (YAML, or JSON, which YAML reads
// too) to c: a mapping of knob names to values, such as
//
//	preset: default          # optional: start from this preset
//	detect_timeout: 200ms
//	retry_codes: [17, 14, 1] # or "17,14,1", default, none
//	durations:               # or "550ms,1800ms;2s,5s", or default
//	  latency_max:   [550ms, 1800ms]
//	  not_available: [2s, 5s]
//
// A preset key replaces c with that preset before the other keys apply. name
// is the document's name in error messages (a path). Decode does not
// Validate; an unknown key, a repeated key or a value that does not parse is
// an *Error, every one of them reported (joined as LoadEnv's are), and c is
// unchanged then.
func (c *Config) Decode(data []byte, name string) error {
	file, errs := parseFile(data, name)
	if file.fatal {
		return join(errs)
	}
	next, err := presetFor(file.preset, *c)
	if err != nil {
		errs = append(errs, err)
	}
	for _, e := range file.entries {
		errs = append(errs, next.apply(e)...)
	}
	if len(errs) > 0 {
		if name == "" {
			name = "config"
		}
		sortProblems(errs, name)
		return join(errs)
	}
	*c = next
	return nil
}

// ApplyEnv sets every knob whose MQFAULT_ variable environ has (a list of
// "KEY=value", as os.Environ returns; empty values count as unset). It does not
// Validate, and ignores MQFAULT_PRESET and MQFAULT_CONFIG (Load uses them).
// Every problem is reported (joined as LoadEnv's are); on error c is
// unchanged.
func (c *Config) ApplyEnv(environ []string) error {
	env, errs := parseEnv(environ)
	next := *c
	for _, e := range env.entries {
		errs = append(errs, next.apply(e)...)
	}
	if len(errs) > 0 {
		sortProblems(errs, "")
		return join(errs)
	}
	*c = next
	return nil
}

// entry is one knob's value as written somewhere.
type entry struct {
	knob   knob
	value  string
	source string
}

// apply sets e's knob, or returns one *Error per problem with its value.
func (c *Config) apply(e entry) []error {
	err := e.knob.bind(c).set(strings.TrimSpace(e.value))
	if err == nil {
		return nil
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	errs := make([]error, len(parts))
	for i, p := range parts {
		errs[i] = &Error{Knob: e.knob.name, Value: e.value, Source: e.source, Reason: p.Error(), Err: unwrapCause(p)}
	}
	return errs
}

type metaValue struct{ value, source string }

type parsedEnv struct {
	entries    []entry
	preset     *metaValue
	configPath string
}

// parseEnv returns the knobs environ sets and an *Error for every variable
// that looks like a misspelt knob's.
func parseEnv(environ []string) (parsedEnv, []error) {
	var out parsedEnv
	var errs []error
	byKnob := make(map[string]entry)
	for _, kv := range environ {
		key, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(key, EnvPrefix) || val == "" {
			continue
		}
		name := strings.ToLower(strings.TrimPrefix(key, EnvPrefix))
		switch name {
		case presetKey:
			out.preset = &metaValue{val, key}
			continue
		case configKey:
			out.configPath = val
			continue
		}
		k, ok := lookupKnob(name)
		if !ok || key != EnvName(name) {
			if nearest(name) == "" {
				continue // another component's variable (MQFAULT_PLUGIN, ...), not a knob's typo
			}
			errs = append(errs, unknownVariable(key, val))
			continue
		}
		byKnob[k.name] = entry{knob: k, value: val, source: key}
	}
	for _, k := range knobs { // table order, so errors do not depend on the environment's order
		if e, ok := byKnob[k.name]; ok {
			out.entries = append(out.entries, e)
		}
	}
	slices.SortStableFunc(errs, func(a, b error) int { return strings.Compare(a.(*Error).Knob, b.(*Error).Knob) })
	return out, errs
}

func unknownVariable(key, val string) *Error {
	reason := "no such variable"
	if near := nearest(strings.ToLower(strings.TrimPrefix(key, EnvPrefix))); near != "" {
		reason += " (did you mean " + EnvName(near) + "?)"
	}
	return &Error{Knob: key, Value: val, Reason: reason}
}

type parsedFile struct {
	entries []entry
	preset  *metaValue
	// fatal is set when the file could not be read as a document at all
	// (too large, not YAML): its one error is all there is to say.
	fatal bool
}

// parseFile returns the knobs a document sets and an *Error for every
// problem in it, in the order of their lines.
func parseFile(data []byte, name string) (parsedFile, []error) {
	if name == "" {
		name = "config"
	}
	if len(data) > MaxFileSize {
		return parsedFile{fatal: true}, []error{&Error{Source: name, Reason: fmt.Sprintf("the file is larger than %d bytes", MaxFileSize)}}
	}
	root, prob := yamldoc.Parse(data)
	if prob != nil {
		if yamldoc.IsEmpty(prob) {
			return parsedFile{}, nil
		}
		return parsedFile{fatal: true}, []error{&Error{Source: at(name, prob.Line), Reason: prob.Msg}}
	}
	if root = yamldoc.Resolve(root); yamldoc.IsNull(root) {
		return parsedFile{}, nil
	}
	var out parsedFile
	var errs []located
	fail := func(n *yaml.Node, knob, value, reason string) {
		errs = append(errs, located{n.Line, &Error{Knob: knob, Value: value, Source: at(name, n.Line), Reason: reason}})
	}
	var d yamldoc.Decoder
	d.Max = len(knobs) * 4
	d.Mapping(root, "", "a mapping of knob names to values", func(key string, kn, vn *yaml.Node, path string) {
		if key == presetKey {
			if vn.Kind != yaml.ScalarNode {
				fail(vn, key, "", "must be one of "+strings.Join(Presets(), ", "))
				return
			}
			out.preset = &metaValue{vn.Value, at(name, vn.Line)}
			return
		}
		k, ok := lookupKnob(key)
		if !ok {
			ue := unknownKnob(key, vn.Value, at(name, kn.Line))
			errs = append(errs, located{kn.Line, ue})
			return
		}
		if val, ok := nodeValue(&d, k, vn, path); ok {
			// The key's line: a block list or table starts on the next one.
			out.entries = append(out.entries, entry{knob: k, value: val, source: at(name, kn.Line)})
		}
	})
	for _, p := range d.Problems() {
		knob, rest := splitPath(p.Path)
		reason := p.Msg
		if rest != "" {
			reason = rest + ": " + reason
		} else if strings.HasPrefix(p.Path, knob+"[") {
			reason = strings.TrimPrefix(itemWords(p.Path[len(knob):]), " ") + ": " + reason
		}
		if p.Path == "" {
			reason = "the document " + reason
		}
		errs = append(errs, located{p.Line, &Error{Knob: knob, Source: at(name, p.Line), Reason: reason}})
	}
	if n := d.Dropped(); n > 0 {
		errs = append(errs, located{math.MaxInt, &Error{Source: name, Reason: fmt.Sprintf("... and %d more problems", n)}})
	}
	slices.SortStableFunc(errs, func(a, b located) int { return cmp.Compare(a.line, b.line) })
	out2 := make([]error, len(errs))
	for i, e := range errs {
		out2[i] = e.err
	}
	return out, out2
}

// located is a file's problem with its line, for sorting.
type located struct {
	line int
	err  *Error
}

// splitPath splits a decoder path into its knob and the part inside it in
// a user's words: "durations.latency_max[1]" is durations and
// "latency_max item 2"; "retry_codes[0]" is retry_codes and "".
func splitPath(path string) (knob, rest string) {
	i := strings.IndexAny(path, ".[")
	if i < 0 {
		return path, ""
	}
	knob, rest = path[:i], path[i:]
	if !strings.HasPrefix(rest, ".") {
		return knob, ""
	}
	return knob, itemWords(rest[1:])
}

var goIndex = regexp.MustCompile(`\[(\d+)\]`)

// itemWords writes a path's Go indexes as items counted from 1:
// "latency_max[1]" is "latency_max item 2".
func itemWords(path string) string {
	return goIndex.ReplaceAllStringFunc(path, func(m string) string {
		n, _ := strconv.Atoi(m[1 : len(m)-1])
		return " item " + strconv.Itoa(n+1)
	})
}

// nodeValue turns a file value into the knob's written form, reporting a
// value of the wrong shape to d.
func nodeValue(d *yamldoc.Decoder, k knob, n *yaml.Node, path string) (string, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		if yamldoc.IsNull(n) {
			d.Fail(n, path, "needs a value")
			return "", false
		}
		return n.Value, true
	case yaml.SequenceNode:
		if k.shape != list {
			if k.shape == columns {
				d.Fail(n, path, "must be a mapping of %s, a string thresholds;isolations, or default", strings.Join(columnKeys, " and "))
			} else {
				d.Fail(n, path, "takes one value, not a list")
			}
			return "", false
		}
		items, ok := listItems(d, n, path, ",")
		if !ok {
			return "", false
		}
		if len(items) == 0 {
			return "none", true
		}
		return strings.Join(items, ","), true
	case yaml.MappingNode:
		if k.shape != columns {
			d.Fail(n, path, "takes one value, not a mapping")
			return "", false
		}
		cols := make(map[string][]string)
		ok := true
		d.Fields(n, path, columnKeys, func(key string, v *yaml.Node, path string) {
			var items []string
			switch {
			case v.Kind == yaml.SequenceNode:
				var itemsOK bool
				if items, itemsOK = listItems(d, v, path, ",;"); !itemsOK {
					ok = false
					return
				}
			case v.Kind == yaml.ScalarNode && !yamldoc.IsNull(v) && !strings.Contains(v.Value, ";"):
				if v.Value != "" {
					items = []string{v.Value}
				}
			default:
				d.Fail(v, path, "must be a list of durations")
				ok = false
				return
			}
			cols[key] = items
		})
		if d.Failed(path) {
			return "", false
		}
		for _, ck := range columnKeys {
			if _, has := cols[ck]; !has && ok {
				d.Fail(n, path, "the table needs both %s", strings.Join(columnKeys, " and "))
				return "", false
			}
		}
		if !ok {
			return "", false
		}
		return strings.Join(cols[columnKeys[0]], ",") + ";" + strings.Join(cols[columnKeys[1]], ","), true
	}
	d.Fail(n, path, "unsupported value")
	return "", false
}

// listItems returns the scalar items of a sequence, none of which may contain
// a separator of the written form.
func listItems(d *yamldoc.Decoder, n *yaml.Node, path, seps string) ([]string, bool) {
	items := make([]string, 0, len(n.Content))
	ok := true
	d.List(n, path, MaxFileSize, func(c *yaml.Node, path string) {
		switch {
		case c.Kind != yaml.ScalarNode || yamldoc.IsNull(c):
			d.Fail(c, path, "must be a single value, not %s", yamldoc.KindName(c))
			ok = false
		case strings.ContainsAny(c.Value, seps):
			d.Fail(c, path, "%q must be a single value", c.Value)
			ok = false
		default:
			items = append(items, c.Value)
		}
	})
	return items, ok
}

func at(name string, line int) string {
	if line <= 0 {
		return name
	}
	return name + ":" + strconv.Itoa(line)
}

// plainScalar matches values Encode may write unquoted.
var plainScalar = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.µ]*$`)

// Encode writes c as a YAML document, every knob with its description as a
// comment, that Decode reads back to the same knobs. A duration table that is
// not a *latency.StepTable cannot be written: its line is a comment saying so.
func (c Config) Encode() []byte {
	var b bytes.Buffer
	b.WriteString("# mqfault configuration (" + EnvPrefix + "<KNOB> variables override these)\n")
	for _, k := range knobs {
		v := k.bind(&c).get()
		fmt.Fprintf(&b, "\n# %s\n", k.doc)
		switch {
		case k.shape == columns && v == "custom":
			fmt.Fprintf(&b, "# %s: custom (set in code; cannot be written)\n", k.name)
		case k.shape == columns && v != "default":
			cols := strings.SplitN(v, ";", 2)
			fmt.Fprintf(&b, "%s:\n", k.name)
			for i, ck := range columnKeys {
				fmt.Fprintf(&b, "  %s: [%s]\n", ck, strings.ReplaceAll(cols[i], ",", ", "))
			}
		case k.shape == list && v != "default" && v != "none":
			fmt.Fprintf(&b, "%s: [%s]\n", k.name, strings.ReplaceAll(v, ",", ", "))
		default:
			if !plainScalar.MatchString(v) {
				v = strconv.Quote(v)
			}
			fmt.Fprintf(&b, "%s: %s\n", k.name, v)
		}
	}
	return b.Bytes()
}
