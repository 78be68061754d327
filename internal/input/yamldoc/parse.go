package yamldoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong in a document.
type Problem struct {
	// Path is the field's path, such as "brokers[0].latency.p99"; for the
	// document as a whole, the Decoder's RootName (or "").
	Path string
	// Line and Column locate the problem, counted from 1; 0 when unknown.
	Line, Column int
	// Msg says what is wrong, in a phrase that follows the path.
	Msg string
}

// String returns "line N: path: message", leaving out what is unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// emptyMsg is the message of Parse's problem for a document that holds
// nothing (no bytes, only comments or whitespace).
const emptyMsg = "the document is empty"

// IsEmpty reports whether p is Parse's problem for an empty document.
func IsEmpty(p *Problem) bool { return p != nil && p.Msg == emptyMsg && p.Line == 0 }

// Parse reads data as exactly one YAML document (JSON is read too: YAML's
// flow style is a superset of it) and returns its root node, aliases not yet
// followed (see Resolve). It returns a problem instead when data holds no
// document (see IsEmpty), is not valid YAML or JSON, or holds a second
// document. A syntax problem carries the line (and for JSON the column)
// where the parser found it: for a document that starts with { or [ the
// position is the one encoding/json reports, exact to the byte; for YAML it
// is the line of the construct the parser was reading (for a list or a
// mapping that is never closed, the line where it opens).
func Parse(data []byte) (*yaml.Node, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Problem{Msg: emptyMsg}
		}
		return nil, syntaxProblem(data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, syntaxProblem(data, err)
		}
		return nil, &Problem{Line: extra.Line, Msg: "a second document begins here: a file holds one YAML document"}
	}
	root := Resolve(&doc)
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, &Problem{Msg: emptyMsg}
		}
		root = root.Content[0]
	}
	return root, nil
}

var yamlError = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// parserProblems are the problems go.yaml.in/yaml/v3 raises in its parser
// rather than its scanner: their line is counted from 0 in the message (the
// scanner's from 1), and a problem on the first line has none.
var parserProblems = map[string]bool{
	"did not find expected node content":     true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

func syntaxProblem(data []byte, err error) *Problem {
	if looksLikeJSON(data) {
		var v any
		var se *json.SyntaxError
		if jerr := json.Unmarshal(data, &v); errors.As(jerr, &se) {
			offset := se.Offset
			if jerr.Error() == "unexpected end of JSON input" {
				offset = int64(len(data)) + 1 // the end, after the last byte
			}
			line, col := position(data, offset)
			return &Problem{Line: line, Column: col, Msg: "not valid JSON at column " + strconv.Itoa(col) + ": " + se.Error()}
		}
	}
	m := yamlError.FindStringSubmatch(err.Error())
	if m == nil {
		return &Problem{Msg: "not valid YAML: " + err.Error()}
	}
	p := &Problem{Msg: "not valid YAML: " + m[2]}
	line, _ := strconv.Atoi(m[1]) // 0 when the message has no line
	if parserProblems[m[2]] {
		line++
	}
	if line > 0 {
		p.Line = line
	}
	return p
}

func looksLikeJSON(data []byte) bool {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && (data[0] == '{' || data[0] == '[')
}

// position returns the line and column of the byte before offset (the one
// encoding/json stopped at; len(data)+1 for the end of data), counted from 1.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data))+1 {
		offset = int64(len(data)) + 1
	}
	if offset < 1 {
		offset = 1
	}
	before := data[:offset-1]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// Resolve follows an alias to the node it names (a few levels at most: yaml
// refuses cycles).
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// KindName describes what n is, for a message such as "is a list, want a
// duration".
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if IsNull(n) {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}

// IsNull reports whether n is an empty value (nothing, ~ or null).
func IsNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }
