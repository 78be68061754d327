package doccheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A ```go block in a markdown file says where its code is compiled, in an HTML
// comment on the line before it, and TestGoBlocks holds it to that:
//
//	<!-- compiled: PATH NAME -->  PATH is a .go file of the repository and NAME a
//	                              top-level declaration in it (a func, TYPE.METHOD, a
//	                              type, var or const): the block's lines, each trimmed
//	                              and its runs of blanks made one space, blank lines
//	                              aside, are a contiguous run of the lines of NAME's
//	                              declaration (a func's from its signature to its
//	                              closing brace). A package clause at the block's
//	                              start must be PATH's, and an import declaration
//	                              there may name only imports of PATH.
//	<!-- declared: PATH -->       the block declares functions without bodies
//	                              (`func [PKG.]NAME(PARAMS) RESULTS`) and types, and
//	                              each is, comments aside, what PATH declares: the same
//	                              signature, parameter names included, the same type
//	                              (a struct's fields, in order). PKG, if given, is
//	                              PATH's package, which may qualify the types PATH
//	                              declares too.
//	<!-- text: WHY -->            not checked, and why.
//
// Most blocks are compiled in an example_test.go of the package they use, whose
// examples and tests run with the package's tests: a snippet that no longer compiles
// breaks the build, and one that is edited apart from its counterpart breaks this test.
func TestGoBlocks(t *testing.T) {
	root := repoRoot(t)
	blocks := blocksIn(t, root, "go")
	if len(blocks) == 0 {
		t.Fatal("no ```go block in the repository's markdown: the scanner is broken")
	}
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		kind, arg, _ := strings.Cut(b.marker, ":")
		arg = strings.TrimSpace(arg)
		switch strings.TrimSpace(kind) {
		case "compiled":
			f := strings.Fields(arg)
			if len(f) != 2 {
				t.Errorf("%s: <!-- compiled: %s -->: want <!-- compiled: PATH NAME -->", where, arg)
				continue
			}
			if err := checkCompiled(root, f[0], f[1], b.lines); err != nil {
				t.Errorf("%s: %v", where, err)
			}
		case "declared":
			f := strings.Fields(arg)
			if len(f) != 1 {
				t.Errorf("%s: <!-- declared: %s -->: want <!-- declared: PATH -->", where, arg)
				continue
			}
			for _, err := range checkDeclared(root, f[0], b.lines) {
				t.Errorf("%s: %v", where, err)
			}
		case "text":
			if arg == "" {
				t.Errorf("%s: <!-- text: WHY -->: say why the block cannot be compiled", where)
			}
		default:
			t.Errorf("%s: a ```go block needs a comment on the line before it saying where it is compiled "+
				"(<!-- compiled: PATH NAME -->, <!-- declared: PATH --> or <!-- text: WHY -->), got %q", where, b.marker)
		}
	}
}

// goFile is a parsed .go file of the repository with its lines.
type goFile struct {
	path  string // relative to the repository's root
	fset  *token.FileSet
	file  *ast.File
	lines []string
}

func parseGoFile(root, path string) (*goFile, error) {
	if !strings.HasSuffix(path, ".go") || filepath.IsAbs(path) || strings.HasPrefix(filepath.Clean(path), "..") {
		return nil, fmt.Errorf("%s is not a .go file of the repository (a path relative to its root)", path)
	}
	src, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution) // no comments: declared compares declarations without them
	if err != nil {
		return nil, err
	}
	return &goFile{path: path, fset: fset, file: f, lines: strings.Split(string(src), "\n")}, nil
}

// decl returns the source lines of the top-level declaration name: a func, a method
// as TYPE.METHOD, or a type, var or const (its whole declaration when it is the only
// spec of it, else the spec's lines).
func (g *goFile) decl(name string) ([]string, error) {
	span := func(from, to token.Pos) []string {
		return g.lines[g.fset.Position(from).Line-1 : g.fset.Position(to).Line]
	}
	recv, fn, isMethod := strings.Cut(name, ".")
	if !isMethod {
		fn = recv
	}
	for _, d := range g.file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name != fn || (d.Recv != nil) != isMethod {
				continue
			}
			if isMethod && receiverType(d) != recv {
				continue
			}
			return span(d.Pos(), d.End()), nil
		case *ast.GenDecl:
			if isMethod {
				continue
			}
			for _, s := range d.Specs {
				var names []*ast.Ident
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = []*ast.Ident{s.Name}
				case *ast.ValueSpec:
					names = s.Names
				}
				for _, n := range names {
					if n.Name != name {
						continue
					}
					if len(d.Specs) == 1 {
						return span(d.Pos(), d.End()), nil
					}
					return span(s.Pos(), s.End()), nil
				}
			}
		}
	}
	return nil, fmt.Errorf("%s declares no %s", g.path, name)
}

// receiverType is the name of a method's receiver type, without a pointer or type
// parameters.
func receiverType(d *ast.FuncDecl) string {
	x := d.Recv.List[0].Type
	if s, ok := x.(*ast.StarExpr); ok {
		x = s.X
	}
	switch e := x.(type) {
	case *ast.IndexExpr:
		x = e.X
	case *ast.IndexListExpr:
		x = e.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// trimmed returns the lines trimmed, each run of spaces and tabs within them made one
// space (gofmt aligns trailing comments, a README need not), blank lines left out.
func trimmed(lines []string) []string {
	var out []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}

// checkCompiled checks a block marked <!-- compiled: path name -->.
func checkCompiled(root, path, name string, block []string) error {
	g, err := parseGoFile(root, path)
	if err != nil {
		return err
	}
	code := trimmed(block)
	if len(code) > 0 && strings.HasPrefix(code[0], "package ") {
		if got := strings.TrimSpace(strings.TrimPrefix(code[0], "package ")); got != g.file.Name.Name {
			return fmt.Errorf("the block is package %s, %s is package %s", got, path, g.file.Name.Name)
		}
		code = code[1:]
	}
	if len(code) > 0 && strings.HasPrefix(code[0], "import") {
		n := 1
		if strings.HasSuffix(code[0], "(") {
			n = slices.Index(code, ")") + 1
			if n == 0 {
				return fmt.Errorf("the block's import declaration has no closing parenthesis")
			}
		}
		if err := checkImports(g, code[:n]); err != nil {
			return err
		}
		code = code[n:]
	}
	if len(code) == 0 {
		return fmt.Errorf("the block has no code past its package clause and imports")
	}
	lines, err := g.decl(name)
	if err != nil {
		return err
	}
	if !containsRun(trimmed(lines), code) {
		return fmt.Errorf("the block is not a run of the lines of %s in %s (each line trimmed, blank lines aside).\n--- the block\n%s\n--- %s\n%s",
			name, path, strings.Join(code, "\n"), name, strings.Join(lines, "\n"))
	}
	return nil
}

// checkImports checks that every import of decl (an import declaration's lines) is
// an import of g under the same name.
func checkImports(g *goFile, decl []string) error {
	f, err := parser.ParseFile(token.NewFileSet(), "block.go", "package p\n"+strings.Join(decl, "\n"), parser.ImportsOnly)
	if err != nil {
		return fmt.Errorf("the block's import declaration: %v", err)
	}
	has := map[string]bool{}
	for _, im := range g.file.Imports {
		has[importKey(im)] = true
	}
	var missing []string
	for _, im := range f.Imports {
		if !has[importKey(im)] {
			missing = append(missing, importKey(im))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the block imports %s, which %s does not", strings.Join(missing, ", "), g.path)
	}
	return nil
}

func importKey(im *ast.ImportSpec) string {
	path, _ := strconv.Unquote(im.Path.Value)
	if im.Name != nil {
		return im.Name.Name + " " + strconv.Quote(path)
	}
	return strconv.Quote(path)
}

// checkDeclared checks a block marked <!-- declared: path -->: each of its
// declarations, comments aside, is one path makes: a function's signature, a type's
// definition.
func checkDeclared(root, path string, block []string) []error {
	g, err := parseGoFile(root, path)
	if err != nil {
		return []error{err}
	}
	pkg := g.file.Name.Name
	var errs []error
	src := []string{"package p"}
	for i, l := range block {
		if name, ok := strings.CutPrefix(l, "func "); ok {
			if q, rest, ok := strings.Cut(name, "."); ok && !strings.ContainsAny(q, "( ") {
				if q != pkg {
					errs = append(errs, fmt.Errorf("line %d names %s.%s, but %s is package %s", i+1, q, strings.SplitN(rest, "(", 2)[0], path, pkg))
				}
				l = "func " + rest
			}
		}
		src = append(src, l)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "block.go", strings.Join(src, "\n"), parser.SkipObjectResolution)
	if err != nil {
		return append(errs, fmt.Errorf("the block is not Go declarations: %v", err))
	}
	if len(f.Decls) == 0 {
		return append(errs, fmt.Errorf("the block declares nothing"))
	}
	line := func(n ast.Node) int { return fset.Position(n.Pos()).Line - 1 }
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil || d.Body != nil {
				errs = append(errs, fmt.Errorf("line %d: only a function's signature, without receiver or body", line(d)))
				continue
			}
			unqualify(d.Type, pkg)
			got := g.funcDecl(d.Name.Name)
			if got == nil {
				errs = append(errs, fmt.Errorf("line %d: %s declares no function %s", line(d), path, d.Name.Name))
				continue
			}
			if w, h := oneLine(fset, d.Type), oneLine(g.fset, got.Type); w != h {
				errs = append(errs, fmt.Errorf("line %d: %s declares %s as\n\t%s\nthe block has\n\t%s", line(d), path, d.Name.Name, h, w))
			}
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				errs = append(errs, fmt.Errorf("line %d: only functions and types", line(d)))
				continue
			}
			for _, s := range d.Specs {
				ts := s.(*ast.TypeSpec)
				ts.Type = unqualifyExpr(ts.Type, pkg)
				got := g.typeSpec(ts.Name.Name)
				if got == nil {
					errs = append(errs, fmt.Errorf("line %d: %s declares no type %s", line(ts), path, ts.Name.Name))
					continue
				}
				if w, h := oneLine(fset, ts.Type), oneLine(g.fset, got.Type); w != h {
					errs = append(errs, fmt.Errorf("line %d: %s declares %s as\n\t%s\nthe block has (comments aside)\n\t%s", line(ts), path, ts.Name.Name, h, w))
				}
			}
		default:
			errs = append(errs, fmt.Errorf("line %d: only functions and types", line(d)))
		}
	}
	return errs
}

// funcDecl returns the function name declares (not a method), or nil.
func (g *goFile) funcDecl(name string) *ast.FuncDecl {
	for _, d := range g.file.Decls {
		if d, ok := d.(*ast.FuncDecl); ok && d.Recv == nil && d.Name.Name == name {
			return d
		}
	}
	return nil
}

// typeSpec returns the type name declares, or nil.
func (g *goFile) typeSpec(name string) *ast.TypeSpec {
	for _, d := range g.file.Decls {
		if d, ok := d.(*ast.GenDecl); ok && d.Tok == token.TYPE {
			for _, s := range d.Specs {
				if s := s.(*ast.TypeSpec); s.Name.Name == name {
					return s
				}
			}
		}
	}
	return nil
}

// unqualify rewrites pkg.X to X in a function type written outside package pkg.
func unqualify(ft *ast.FuncType, pkg string) {
	for _, fl := range []*ast.FieldList{ft.Params, ft.Results} {
		if fl == nil {
			continue
		}
		for _, f := range fl.List {
			f.Type = unqualifyExpr(f.Type, pkg)
		}
	}
}

func unqualifyExpr(x ast.Expr, pkg string) ast.Expr {
	switch e := x.(type) {
	case *ast.SelectorExpr:
		if id, ok := e.X.(*ast.Ident); ok && id.Name == pkg {
			return e.Sel
		}
	case *ast.StarExpr:
		e.X = unqualifyExpr(e.X, pkg)
	case *ast.ArrayType:
		e.Elt = unqualifyExpr(e.Elt, pkg)
	case *ast.MapType:
		e.Key, e.Value = unqualifyExpr(e.Key, pkg), unqualifyExpr(e.Value, pkg)
	case *ast.ChanType:
		e.Value = unqualifyExpr(e.Value, pkg)
	case *ast.Ellipsis:
		e.Elt = unqualifyExpr(e.Elt, pkg)
	case *ast.FuncType:
		unqualify(e, pkg)
	case *ast.StructType:
		for _, f := range e.Fields.List {
			f.Type = unqualifyExpr(f.Type, pkg)
		}
	}
	return x
}

// oneLine prints a type expression (comments aside) on one line.
func oneLine(fset *token.FileSet, x ast.Expr) string {
	var buf bytes.Buffer
	if err := printer.Fprint(&buf, fset, x); err != nil {
		return err.Error()
	}
	s := strings.Join(strings.Fields(buf.String()), " ")
	return strings.NewReplacer(",)", ")", ", )", ")", "( ", "(").Replace(s)
}

// TestGoBlockChecks holds the two checks to what they say, on a file of its own.
func TestGoBlockChecks(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "x.go"), `package x

import (
	"fmt"

	str "strings"
)

// T is a type.
type T struct {
	// A is a field.
	A int
	B str.Builder
}

func (T) M() {}

var table = []int{
	1,
	2, // two
}

func Send(ctx fmt.Stringer, t *T) (T, error) {
	v := t.A   // aligned
	if v > 1 { // by gofmt
		return T{}, nil
	}
	return *t, fmt.Errorf("no")
}
`)
	compiled := []struct {
		name, decl string
		block      []string
		err        string // "" for none
	}{
		{"a run of a func", "Send", []string{"\tv := t.A // aligned", "", "if v > 1 {   // by gofmt"}, ""},
		{"the signature too", "Send", []string{"func Send(ctx fmt.Stringer, t *T) (T, error) {", "v := t.A // aligned"}, ""},
		{"package and imports", "Send", []string{"package x", "import (", `"fmt"`, `str "strings"`, ")", "return *t, fmt.Errorf(\"no\")"}, ""},
		{"a method", "T.M", []string{"func (T) M() {}"}, ""},
		{"a var", "table", []string{"2, // two"}, ""},
		{"a type", "T", []string{"type T struct {", "// A is a field.", "A int"}, ""},
		{"not a run", "Send", []string{"v := t.A // aligned", "return *t, fmt.Errorf(\"no\")"}, "not a run of the lines of Send"},
		{"an edited line", "Send", []string{"v := t.B // aligned"}, "not a run"},
		{"no such name", "Recv", []string{"v := t.A"}, "declares no Recv"},
		{"a method is not a func", "M", []string{"func (T) M() {}"}, "declares no M"},
		{"another package", "Send", []string{"package main", "v := t.A"}, "is package x"},
		{"an import the file lacks", "Send", []string{`import "os"`, "v := t.A"}, `imports "os"`},
		{"an import under another name", "Send", []string{`import "strings"`, "v := t.A"}, `imports "strings"`},
		{"only imports", "Send", []string{`import "fmt"`}, "no code"},
	}
	for _, c := range compiled {
		err := checkCompiled(root, "x.go", c.decl, c.block)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("compiled, %s: got %v, want %q", c.name, err, c.err)
		}
	}
	if err := checkCompiled(root, "../x.go", "Send", []string{"v := t.A"}); err == nil {
		t.Error("compiled: a path outside the repository was accepted")
	}

	declared := []struct {
		name  string
		block []string
		errs  []string
	}{
		{"a signature", []string{"func Send(ctx fmt.Stringer, t *T) (T, error)"}, nil},
		{"qualified by the package", []string{"func x.Send(ctx fmt.Stringer, t *x.T) (x.T, error)"}, nil},
		{"a struct, comments aside", []string{"type T struct {", "A int // a", "B str.Builder", "}"}, nil},
		{"another parameter name", []string{"func Send(c fmt.Stringer, t *T) (T, error)"}, []string{"declares Send as"}},
		{"another result", []string{"func Send(ctx fmt.Stringer, t *T) error"}, []string{"declares Send as"}},
		{"another package", []string{"func y.Send(ctx fmt.Stringer, t *T) (T, error)"}, []string{"names y.Send, but x.go is package x"}},
		{"no such function", []string{"func Recv()"}, []string{"declares no function Recv"}},
		{"a missing field", []string{"type T struct {", "A int", "}"}, []string{"declares T as"}},
		{"each line on its own", []string{"func Send(ctx fmt.Stringer, t *T) (T, error)", "func Recv()", "func Send()"},
			[]string{"line 2: x.go declares no function Recv", "line 3: x.go declares Send as"}},
		{"a body", []string{"func Send(ctx fmt.Stringer, t *T) (T, error) { return T{}, nil }"}, []string{"without receiver or body"}},
		{"a var", []string{"var table []int"}, []string{"only functions and types"}},
	}
	for _, c := range declared {
		errs := checkDeclared(root, "x.go", c.block)
		if len(errs) != len(c.errs) {
			t.Errorf("declared, %s: got %v, want %q", c.name, errs, c.errs)
			continue
		}
		for i, err := range errs {
			if !strings.Contains(err.Error(), c.errs[i]) {
				t.Errorf("declared, %s: got %v, want %q", c.name, err, c.errs[i])
			}
		}
	}
}
