package rocketmqgo_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// compiledRE is the comment before a README code block whose lines are, verbatim,
// a run of lines of a Go function's body (one indentation level removed), so
// that the block compiles and runs as part of the tests:
// <!-- compiled: PATH FUNC -->, PATH from the repository's root.
var compiledRE = regexp.MustCompile(`^<!--\s*compiled:\s*(\S+)\s+(\S+)\s*-->$`)

// TestReadmeCompiledSnippets holds every block of README.md marked
// <!-- compiled: PATH FUNC --> to the body of FUNC in PATH.
func TestReadmeCompiledSnippets(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	found := 0
	for i := 0; i < len(lines); i++ {
		m := compiledRE.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		found++
		where := "README.md:" + strconv.Itoa(i+1)
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```go") {
			t.Errorf("%s: a compiled marker not followed by a ```go block", where)
			continue
		}
		end := slices.Index(lines[i+2:], "```")
		if end < 0 {
			t.Errorf("%s: the block never ends", where)
			continue
		}
		block := lines[i+2 : i+2+end]
		body, err := funcBody(filepath.Join("..", "..", m[1]), m[2])
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		if len(block) == 0 || !containsRun(body, block) {
			t.Errorf("%s: the block is not a run of lines of %s's body.\n--- the block\n%s\n--- the body\n%s",
				where, m[2], strings.Join(block, "\n"), strings.Join(body, "\n"))
		}
		i += 1 + end
	}
	if found == 0 {
		t.Error("README.md has no <!-- compiled: PATH FUNC --> block")
	}
}

// funcBody returns the lines of the body of the function name in the Go
// file at path, without its braces, one tab of indentation removed.
func funcBody(path, name string) ([]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != name || fd.Body == nil {
			continue
		}
		inner := string(src[fset.Position(fd.Body.Lbrace).Offset+1 : fset.Position(fd.Body.Rbrace).Offset])
		var out []string
		for _, l := range strings.Split(strings.Trim(inner, "\n"), "\n") {
			out = append(out, strings.TrimPrefix(l, "\t"))
		}
		return out, nil
	}
	return nil, &os.PathError{Op: "find func " + name, Path: path, Err: os.ErrNotExist}
}

// containsRun says whether want occurs in have as a contiguous run.
func containsRun(have, want []string) bool {
	for i := 0; i+len(want) <= len(have); i++ {
		if slices.Equal(have[i:i+len(want)], want) {
			return true
		}
	}
	return false
}
