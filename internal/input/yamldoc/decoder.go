package yamldoc

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mqfault/mqfault/internal/input/suggest"
)

// DefaultMax is how many problems a Decoder keeps when Max is 0.
const DefaultMax = 50

// Decoder walks a document's nodes and collects the problems it finds. Each
// reader reports a problem for a value it cannot decode and returns the zero
// value, so a caller decodes the whole document and then looks at Problems.
// The zero Decoder is ready to use.
type Decoder struct {
	// RootName is the path Problems give the document as a whole, such as
	// "(scenario)"; "" leaves it out.
	RootName string
	// Max bounds the problems kept; the rest are only counted (Dropped).
	// 0 means DefaultMax.
	Max int

	problems []Problem
	dropped  int
	failed   []string          // the paths of every problem, kept or dropped
	pos      map[string][2]int // path -> line, column of its value
}

// Fail reports a problem with the value at path, at node n's line and column.
func (d *Decoder) Fail(n *yaml.Node, path, format string, args ...any) {
	d.failed = append(d.failed, path)
	d.report(n, path, format, args...)
}

// report records a problem that says nothing about the value at path (a
// key of the mapping at path that is not a name), so Failed ignores it.
func (d *Decoder) report(n *yaml.Node, path, format string, args ...any) {
	max := d.Max
	if max == 0 {
		max = DefaultMax
	}
	if len(d.problems) >= max {
		d.dropped++
		return
	}
	shown := path
	if shown == "" {
		shown = d.RootName
	}
	p := Problem{Path: shown, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	d.problems = append(d.problems, p)
}

// Problems returns the problems reported so far, in document order.
func (d *Decoder) Problems() []Problem { return d.problems }

// Dropped returns how many problems were reported past Max and not kept.
func (d *Decoder) Dropped() int { return d.dropped }

// Failed reports whether a problem was reported at path, at a field that
// encloses it, or at a field inside it: a check of the value decoded at path
// would then only repeat that problem (a duration that did not parse is
// decoded as 0, which a range check would call "not positive").
func (d *Decoder) Failed(path string) bool {
	for _, f := range d.failed {
		if within(path, f) || within(f, path) {
			return true
		}
	}
	return false
}

// within reports whether path is inner or a field inside it.
func within(path, outer string) bool {
	if outer == "" || path == outer {
		return true
	}
	return strings.HasPrefix(path, outer) && (path[len(outer)] == '.' || path[len(outer)] == '[')
}

// Position returns the line and column of the value at path or, when it was
// not in the document (a field left out), of the closest field enclosing it;
// 0, 0 when none was.
func (d *Decoder) Position(path string) (line, col int) {
	for {
		if lc, ok := d.pos[path]; ok {
			return lc[0], lc[1]
		}
		i := strings.LastIndexAny(path, ".[")
		if i <= 0 {
			return 0, 0
		}
		path = path[:i]
	}
}

func (d *Decoder) record(path string, n *yaml.Node) {
	if d.pos == nil {
		d.pos = make(map[string][2]int)
	}
	d.pos[path] = [2]int{n.Line, n.Column}
}

// Join returns path's field key: "key" at the root, "path.key" below it.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Mapping walks mapping n at path, calling f with each key and value
// (aliases followed) and the value's path. A node that is not a mapping, a
// key that is not a plain value and a key written twice are problems, and f
// is not called for them. want describes what the mapping holds, for the
// message when n is something else ("a mapping of knob names to values").
func (d *Decoder) Mapping(n *yaml.Node, path, want string, f func(key string, k, v *yaml.Node, path string)) {
	n = Resolve(n)
	if n.Kind != yaml.MappingNode {
		d.Fail(n, path, "is %s, want %s", KindName(n), want)
		return
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := Resolve(n.Content[i]), Resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.report(k, path, "a key is %s, want a name", KindName(k))
			continue
		}
		fp := Join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.Fail(k, fp, "repeated field (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		d.record(fp, v)
		f(k.Value, k, v, fp)
	}
}

// Fields walks mapping n like Mapping, calling set for each key in known; a
// key not in known is a problem naming the fields there are.
func (d *Decoder) Fields(n *yaml.Node, path string, known []string, set func(key string, v *yaml.Node, path string)) {
	want := "a mapping with the fields " + strings.Join(known, ", ")
	d.Mapping(n, path, want, func(key string, k, v *yaml.Node, path string) {
		if !slices.Contains(known, key) {
			if near := suggest.Nearest(key, known); near != "" {
				d.Fail(k, path, UnknownField+" (did you mean %s? want one of %s)", near, strings.Join(known, ", "))
			} else {
				d.Fail(k, path, UnknownField+" (want one of %s)", strings.Join(known, ", "))
			}
			return
		}
		set(key, v, path)
	})
}

// List walks sequence n at path, calling each with every item (aliases
// followed) and its path, "path[i]". An empty value is an empty list; more
// than most items is a problem (and no item is visited).
func (d *Decoder) List(n *yaml.Node, path string, most int, each func(v *yaml.Node, path string)) {
	n = Resolve(n)
	if IsNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.Fail(n, path, "is %s, want a list", KindName(n))
		return
	}
	if len(n.Content) > most {
		d.Fail(n, path, "%d items, more than %d", len(n.Content), most)
		return
	}
	for i, v := range n.Content {
		fp := path + "[" + strconv.Itoa(i) + "]"
		v = Resolve(v)
		d.record(fp, v)
		each(v, fp)
	}
}

// Scalar returns the text of scalar n; another kind of node, or an empty
// value, is a problem saying the field wants want ("a duration").
func (d *Decoder) Scalar(n *yaml.Node, path, want string) (string, bool) {
	n = Resolve(n)
	if n.Kind != yaml.ScalarNode || IsNull(n) {
		d.Fail(n, path, "is %s, want %s", KindName(n), want)
		return "", false
	}
	return n.Value, true
}

// String returns the text of scalar n.
func (d *Decoder) String(n *yaml.Node, path string) string {
	v, _ := d.Scalar(n, path, "a string")
	return v
}

// Duration returns scalar n as a Go duration ("250ms", "1m30s").
func (d *Decoder) Duration(n *yaml.Node, path string) time.Duration {
	v, ok := d.Scalar(n, path, "a duration such as 250ms, 30s or 1m30s")
	if !ok {
		return 0
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		d.Fail(n, path, "%q is not a duration (write it as 250ms, 30s or 1m30s)", v)
		return 0
	}
	return dur
}

// Int returns scalar n as an integer that fits 32 bits.
func (d *Decoder) Int(n *yaml.Node, path string) int {
	v, ok := d.Scalar(n, path, "an integer")
	if !ok {
		return 0
	}
	var i int64
	if n.ShortTag() != "!!int" || n.Decode(&i) != nil || i < math.MinInt32 || i > math.MaxInt32 {
		d.Fail(n, path, "%q is not an integer", v)
		return 0
	}
	return int(i)
}

// Uint returns scalar n as a non-negative 64-bit integer.
func (d *Decoder) Uint(n *yaml.Node, path string) uint64 {
	v, ok := d.Scalar(n, path, "a non-negative integer")
	if !ok {
		return 0
	}
	var u uint64
	if n.ShortTag() != "!!int" || n.Decode(&u) != nil {
		d.Fail(n, path, "%q is not a non-negative integer", v)
		return 0
	}
	return u
}

// Float returns scalar n as a finite number.
func (d *Decoder) Float(n *yaml.Node, path string) float64 {
	v, ok := d.Scalar(n, path, "a number")
	if !ok {
		return 0
	}
	var f float64
	tag := n.ShortTag()
	if (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.Fail(n, path, "%q is not a number", v)
		return 0
	}
	return f
}

// UnknownField begins the message of the problem Fields reports for a key
// it does not know.
const UnknownField = "unknown field"
