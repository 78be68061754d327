package doccheck

import (
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWireDocInjector checks that the custom injector package wire's doc comment
// shows is the one in wire/internal/exampleinjector/wire.go, which Wire generates
// (wire/ci.sh) and whose test runs it: every code block of the comment that calls
// gwire.Build is a run of that file's lines (each trimmed, blank lines aside).
func TestWireDocInjector(t *testing.T) {
	root := repoRoot(t)
	const docFile, example = "wire/doc.go", "wire/internal/exampleinjector/wire.go"
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, docFile), nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatalf("%s has no package doc comment", docFile)
	}
	src, err := os.ReadFile(filepath.Join(root, example))
	if err != nil {
		t.Fatal(err)
	}
	have := trimmed(strings.Split(string(src), "\n"))
	var p comment.Parser
	checked := 0
	for _, b := range p.Parse(f.Doc.Text()).Content {
		code, ok := b.(*comment.Code)
		if !ok || !strings.Contains(code.Text, "gwire.Build(") {
			continue
		}
		checked++
		if want := trimmed(strings.Split(code.Text, "\n")); !containsRun(have, want) {
			t.Errorf("%s's injector is not %s's:\n--- the doc comment\n%s--- %s\n%s", docFile, example, code.Text, example, src)
		}
	}
	if checked == 0 {
		t.Errorf("%s's doc comment shows no injector (a code block calling gwire.Build)", docFile)
	}
}
