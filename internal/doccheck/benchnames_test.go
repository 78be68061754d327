package doccheck

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// benchRefRE finds a benchmark named in markdown: `BenchmarkName` or
// `BenchmarkName/sub/path`, where "..." in the path stands for any levels.
var benchRefRE = regexp.MustCompile("`(Benchmark[A-Za-z0-9_]+)((?:/[^`\\s]*)?)`")

// benchDeclRE finds a benchmark function's declaration.
var benchDeclRE = regexp.MustCompile(`(?m)^func (Benchmark[A-Za-z0-9_]+)\(b \*testing\.B\)`)

// TestBenchmarkNames: every benchmark the repository's markdown names (its
// performance tables quote them with their numbers) exists: the function is
// declared in a _test.go file, and a sub-benchmark path is one the
// function runs (each such function is run once, -benchtime 1x, in its
// package's directory, every package declaring one of that name, and its
// sub-benchmarks' names read back). A
// benchmark renamed or removed leaves a table quoting numbers nobody can
// reproduce; this fails instead.
func TestBenchmarkNames(t *testing.T) {
	if testing.Short() {
		t.Skip("runs benchmarks once each")
	}
	root := repoRoot(t)
	declared := map[string][]string{} // function -> the package directories declaring it
	refs := map[string][]string{}     // "Function/sub" or "Function" -> where named
	eachFile(t, root, false, func(rel string, text []byte) {
		if strings.HasSuffix(rel, "_test.go") {
			for _, m := range benchDeclRE.FindAllSubmatch(text, -1) {
				if d := filepath.Join(root, filepath.Dir(rel)); !slices.Contains(declared[string(m[1])], d) {
					declared[string(m[1])] = append(declared[string(m[1])], d)
				}
			}
			return
		}
		for _, m := range benchRefRE.FindAllSubmatch(text, -1) {
			name := string(m[1]) + string(m[2])
			refs[name] = append(refs[name], rel)
		}
	}, "_test.go", ".md")
	if len(refs) == 0 {
		t.Fatal("no benchmark named in the repository's markdown: the scanner is broken")
	}
	ran := map[string][]string{} // function -> the names it ran
	names := make([]string, 0, len(refs))
	for name := range refs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fn, sub, _ := strings.Cut(name, "/")
		dirs, ok := declared[fn]
		if !ok {
			t.Errorf("%v name %s: no func %s(b *testing.B) in any _test.go file", refs[name], name, fn)
			continue
		}
		if sub == "" {
			continue
		}
		got, ok := ran[fn]
		if !ok {
			for _, dir := range dirs {
				got = append(got, runBenchmark(t, dir, fn)...)
			}
			ran[fn] = got
		}
		pat := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(name), `\.\.\.`, ".*") + "$")
		if !slices.ContainsFunc(got, pat.MatchString) {
			t.Errorf("%v name %s: %s runs no such sub-benchmark (it runs %d: %s)", refs[name], name, fn, len(got), strings.Join(got, ", "))
		}
	}
}

// procSuffixRE is the -GOMAXPROCS suffix go test puts on a benchmark's name.
var procSuffixRE = regexp.MustCompile(`-\d+$`)

// runBenchmark runs benchmark fn once in package directory dir and returns
// the names it printed, without their -GOMAXPROCS suffix.
func runBenchmark(t *testing.T, dir, fn string) []string {
	t.Helper()
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "^"+fn+"$", "-benchtime", "1x", ".")
	cmd.Dir = dir
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go test -bench ^%s$ in %s: %v\n%s%s", fn, dir, err, out.String(), stderr.String())
	}
	var names []string
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], fn) {
			names = append(names, procSuffixRE.ReplaceAllString(f[0], ""))
		}
	}
	return names
}
