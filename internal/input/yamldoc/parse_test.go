package yamldoc

import (
	"go.yaml.in/yaml/v3"

	"strings"
	"testing"
)

// TestParseSyntaxLines checks that a document that does not parse gets a
// problem with the line where it is wrong, JSON on its first line included
// (go.yaml.in/yaml/v3 gives such errors no line, and its parser's lines
// count from 0).
func TestParseSyntaxLines(t *testing.T) {
	tests := []struct {
		name       string
		doc        string
		line, col  int
		msgContain string
	}{
		{"json one line", `{"timeout": "1s", "retry_times": [1, }`, 1, 38, "not valid JSON at column 38: invalid character '}'"},
		{"json missing comma", "{\n  \"timeout\": \"1s\"\n  \"retry_times\": 1\n}", 3, 3, "invalid character '\"' after object key:value pair"},
		{"json truncated", "{\n  \"timeout\": \"1s\",\n", 3, 1, "unexpected end of JSON input"},
		{"json list", "[1, 2", 1, 6, "not valid JSON"},
		{"yaml flow list not closed", "a: 1\nb: [1, 2\nc: 3\n", 2, 0, "did not find expected ',' or ']'"},
		{"yaml block sequence broken", "a: 1\nb:\n  - 1\n  c: 2\n", 3, 0, "did not find expected '-' indicator"},
		{"yaml bad indentation", "a: 1\n b: 2\n", 2, 0, "mapping values are not allowed in this context"},
		{"yaml unclosed quote", "a: 1\nb: \"x\n", 2, 0, "found unexpected end of stream"},
		{"yaml tab", "a: 1\n\tb: 2\n", 2, 0, "tab character"},
		{"yaml node content on line 1", "a: [1, }\n", 1, 0, "did not find expected node content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p := Parse([]byte(tt.doc))
			if p == nil {
				t.Fatalf("Parse(%q) = no problem, want one at line %d", tt.doc, tt.line)
			}
			if p.Line != tt.line || p.Column != tt.col || !strings.Contains(p.Msg, tt.msgContain) {
				t.Errorf("Parse(%q) = %+v, want line %d column %d and a message containing %q", tt.doc, *p, tt.line, tt.col, tt.msgContain)
			}
		})
	}
}

func TestParseDocuments(t *testing.T) {
	for _, doc := range []string{"", "# only a comment\n", "  \n"} {
		if _, p := Parse([]byte(doc)); !IsEmpty(p) {
			t.Errorf("Parse(%q) = %v, want the empty-document problem", doc, p)
		}
	}
	_, p := Parse([]byte("a: 1\n---\nb: 2\n"))
	if p == nil || p.Line != 2 || !strings.Contains(p.Msg, "one YAML document") {
		t.Errorf("Parse(two documents) = %v, want a problem at line 2 (its ---)", p)
	}
	root, p := Parse([]byte("a: &x 1\nb: *x\n"))
	if p != nil || root == nil || len(root.Content) != 4 {
		t.Fatalf("Parse(mapping) = %v, %v, want its mapping", root, p)
	}
	if got := Resolve(root.Content[3]).Value; got != "1" {
		t.Errorf("Resolve(alias) = %q, want 1", got)
	}
}

// TestDecoderCollects checks that a Decoder keeps going past a problem,
// reports every one with its path and line, and that Failed relates a path
// to the problems at, above and below it.
func TestDecoderCollects(t *testing.T) {
	root, p := Parse([]byte("a: x\nb: [1, y, 3]\nc: {d: 1, d: 2, e: 3}\nf: 5\n"))
	if p != nil {
		t.Fatal(p)
	}
	var d Decoder
	d.RootName = "(doc)"
	d.Fields(root, "", []string{"a", "b", "c"}, func(key string, v *yaml.Node, path string) {
		switch key {
		case "a":
			d.Duration(v, path)
		case "b":
			d.List(v, path, 10, func(v *yaml.Node, path string) { d.Int(v, path) })
		case "c":
			d.Fields(v, path, []string{"d"}, func(key string, v *yaml.Node, path string) { d.Int(v, path) })
		}
	})
	var got []string
	for _, p := range d.Problems() {
		got = append(got, p.String())
	}
	want := []string{
		`line 1: a: "x" is not a duration (write it as 250ms, 30s or 1m30s)`,
		`line 2: b[1]: "y" is not an integer`,
		`line 3: c.d: repeated field (first at line 3)`,
		`line 3: c.e: unknown field (want one of d)`,
		`line 4: f: unknown field (want one of a, b, c)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Problems() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for path, want := range map[string]bool{"a": true, "b": true, "b[1]": true, "b[0]": false, "c": true, "c.d": true, "ab": false, "g": false} {
		if got := d.Failed(path); got != want {
			t.Errorf("Failed(%q) = %t, want %t", path, got, want)
		}
	}
	if l, _ := d.Position("b[2].x"); l != 2 {
		t.Errorf("Position(b[2].x) line = %d, want 2 (b[2]'s)", l)
	}
}
