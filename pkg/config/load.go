package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
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
// Any error is an *Error naming the knob, the value and its source (the
// variable, or the file and line). A variable starting with MQFAULT_ that
// names no knob but is within two edits of one (MQFAULT_TIMEOUTS) is an error
// too, so a typo is not silently ignored; others (MQFAULT_PLUGIN, the plugin
// handshake's) are left alone.
func LoadEnv(path string, environ []string) (Config, error) {
	env, err := parseEnv(environ)
	if err != nil {
		return Config{}, err
	}
	if path == "" {
		path = env.configPath
	}
	var file parsedFile
	if path != "" {
		data, err := readFile(path)
		if err != nil {
			return Config{}, err
		}
		if file, err = parseFile(data, path); err != nil {
			return Config{}, err
		}
	}
	preset := file.preset
	if env.preset != nil {
		preset = env.preset
	}
	cfg := DefaultConfig()
	if preset != nil {
		if cfg, err = Preset(preset.value); err != nil {
			err.(*Error).Source = preset.source
			return Config{}, err
		}
	}
	origins := make(map[string]entry) // where each knob's value was last written
	for _, e := range slices.Concat(file.entries, env.entries) {
		if err := cfg.apply(e); err != nil {
			return Config{}, err
		}
		origins[e.knob.name] = e
	}
	if err := cfg.Validate(); err != nil {
		if ke, ok := err.(*Error); ok {
			if e, ok := origins[ke.Knob]; ok {
				ke.Value, ke.Source = e.value, e.source
			}
		}
		return Config{}, err
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
// an *Error, and c is unchanged then.
func (c *Config) Decode(data []byte, name string) error {
	file, err := parseFile(data, name)
	if err != nil {
		return err
	}
	next := *c
	if file.preset != nil {
		if next, err = Preset(file.preset.value); err != nil {
			err.(*Error).Source = file.preset.source
			return err
		}
	}
	for _, e := range file.entries {
		if err := next.apply(e); err != nil {
			return err
		}
	}
	*c = next
	return nil
}

// ApplyEnv sets every knob whose MQFAULT_ variable environ has (a list of
// "KEY=value", as os.Environ returns; empty values count as unset). It does not
// Validate, and ignores MQFAULT_PRESET and MQFAULT_CONFIG (Load uses them).
// On error c is unchanged.
func (c *Config) ApplyEnv(environ []string) error {
	env, err := parseEnv(environ)
	if err != nil {
		return err
	}
	next := *c
	for _, e := range env.entries {
		if err := next.apply(e); err != nil {
			return err
		}
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

func (c *Config) apply(e entry) error {
	if err := e.knob.bind(c).set(strings.TrimSpace(e.value)); err != nil {
		return &Error{Knob: e.knob.name, Value: e.value, Source: e.source, Reason: err.Error(), Err: unwrapCause(err)}
	}
	return nil
}

type metaValue struct{ value, source string }

type parsedEnv struct {
	entries    []entry
	preset     *metaValue
	configPath string
}

func parseEnv(environ []string) (parsedEnv, error) {
	var out parsedEnv
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
			return parsedEnv{}, unknownVariable(key, val)
		}
		byKnob[k.name] = entry{knob: k, value: val, source: key}
	}
	for _, k := range knobs { // table order, so errors do not depend on the environment's order
		if e, ok := byKnob[k.name]; ok {
			out.entries = append(out.entries, e)
		}
	}
	return out, nil
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
}

func parseFile(data []byte, name string) (parsedFile, error) {
	if name == "" {
		name = "config"
	}
	if len(data) > MaxFileSize {
		return parsedFile{}, &Error{Source: name, Reason: fmt.Sprintf("the file is larger than %d bytes", MaxFileSize)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return parsedFile{}, &Error{Source: name, Reason: err.Error(), Err: err}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return parsedFile{}, nil // empty, or only comments
	}
	root := deref(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return parsedFile{}, nil
	}
	if root.Kind != yaml.MappingNode {
		return parsedFile{}, &Error{Source: at(name, root), Reason: "the document must be a mapping of knob names to values"}
	}
	var out parsedFile
	seen := make(map[string]int)
	for i := 0; i+1 < len(root.Content); i += 2 {
		kn, vn := deref(root.Content[i]), deref(root.Content[i+1])
		if kn.Kind != yaml.ScalarNode {
			return parsedFile{}, &Error{Source: at(name, kn), Reason: "a key must be a knob name"}
		}
		key := kn.Value
		if line, dup := seen[key]; dup {
			return parsedFile{}, &Error{Knob: key, Value: vn.Value, Source: at(name, kn),
				Reason: "set twice (first at line " + strconv.Itoa(line) + ")"}
		}
		seen[key] = kn.Line
		if key == presetKey {
			if vn.Kind != yaml.ScalarNode {
				return parsedFile{}, &Error{Knob: key, Source: at(name, vn), Reason: "must be one of " + strings.Join(Presets(), ", ")}
			}
			out.preset = &metaValue{vn.Value, at(name, vn)}
			continue
		}
		k, ok := lookupKnob(key)
		if !ok {
			return parsedFile{}, unknownKnob(key, vn.Value, at(name, kn))
		}
		val, err := nodeValue(k, vn)
		if err != nil {
			return parsedFile{}, &Error{Knob: key, Value: vn.Value, Source: at(name, vn), Reason: err.Error()}
		}
		out.entries = append(out.entries, entry{knob: k, value: val, source: at(name, vn)})
	}
	return out, nil
}

// nodeValue turns a file value into the knob's written form.
func nodeValue(k knob, n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "", fmt.Errorf("needs a value")
		}
		return n.Value, nil
	case yaml.SequenceNode:
		if k.shape != list {
			if k.shape == columns {
				return "", fmt.Errorf("must be a mapping of %s, a string thresholds;isolations, or default", strings.Join(columnKeys, " and "))
			}
			return "", fmt.Errorf("takes one value, not a list")
		}
		items, err := listItems(n, ",")
		if err != nil {
			return "", err
		}
		if len(items) == 0 {
			return "none", nil
		}
		return strings.Join(items, ","), nil
	case yaml.MappingNode:
		if k.shape != columns {
			return "", fmt.Errorf("takes one value, not a mapping")
		}
		cols := make(map[string][]string)
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := deref(n.Content[i]), deref(n.Content[i+1])
			if kn.Kind != yaml.ScalarNode || !isColumnKey(kn.Value) {
				return "", fmt.Errorf("the table's keys are %s (line %d has %q)", strings.Join(columnKeys, " and "), kn.Line, kn.Value)
			}
			if _, dup := cols[kn.Value]; dup {
				return "", fmt.Errorf("%s is set twice (line %d)", kn.Value, kn.Line)
			}
			var items []string
			switch vn.Kind {
			case yaml.SequenceNode:
				var err error
				if items, err = listItems(vn, ",;"); err != nil {
					return "", fmt.Errorf("%s: %v", kn.Value, err)
				}
			case yaml.ScalarNode:
				if strings.Contains(vn.Value, ";") || vn.Tag == "!!null" {
					return "", fmt.Errorf("%s must be a list of durations", kn.Value)
				}
				if vn.Value != "" {
					items = []string{vn.Value}
				}
			default:
				return "", fmt.Errorf("%s must be a list of durations", kn.Value)
			}
			cols[kn.Value] = append([]string{}, items...)
		}
		for _, ck := range columnKeys {
			if _, ok := cols[ck]; !ok {
				return "", fmt.Errorf("the table needs both %s", strings.Join(columnKeys, " and "))
			}
		}
		return strings.Join(cols[columnKeys[0]], ",") + ";" + strings.Join(cols[columnKeys[1]], ","), nil
	}
	return "", fmt.Errorf("unsupported value")
}

// listItems returns the scalar items of a sequence, none of which may contain
// a separator of the written form.
func listItems(n *yaml.Node, seps string) ([]string, error) {
	items := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		c = deref(c)
		if c.Kind != yaml.ScalarNode || c.Tag == "!!null" {
			return nil, fmt.Errorf("item %d must be a single value", i+1)
		}
		if strings.ContainsAny(c.Value, seps) {
			return nil, fmt.Errorf("item %d (%q) must be a single value", i+1, c.Value)
		}
		items = append(items, c.Value)
	}
	return items, nil
}

// deref follows an alias to its anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func at(name string, n *yaml.Node) string { return name + ":" + strconv.Itoa(n.Line) }

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
