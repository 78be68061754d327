package doccheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A fenced block in a markdown file with no language says what it is in an HTML comment
// on the line before it, and TestPlainBlocks holds it to that:
//
//	<!-- output: mqfault ARGS -->  its lines are a contiguous run of what `mqfault ARGS`,
//	                               run from the repository's root, prints on stdout
//	                               (trailing spaces aside); it must exit 0, or N when
//	                               the marker is <!-- output (exit N): mqfault ARGS -->
//	                               (a verdict the command reports by its status)
//	<!-- synopsis -->              lines "mqfault COMMAND [flags]" (indented lines go on
//	                               the line before): each names exactly the flags that
//	                               `mqfault help COMMAND` lists
//	<!-- tree -->                  each line starts with a path that exists in the repository
//	<!-- text: WHY -->             not checked, and why (an illustration that cannot run here)
//
// A plain block with no such comment is an error: documentation says what its
// figures are, so a test can hold them to the code.
type block struct {
	file   string // relative to the repository's root
	line   int    // of the opening fence
	lang   string // the fence's info string ("go", "go.mod"); "" if none
	marker string // the comment's text between "<!--" and "-->", trimmed; "" if none
	lines  []string
}

var markerRE = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)

// plainBlocks returns every fenced block without a language in the repository's
// markdown files.
func plainBlocks(t *testing.T, root string) []block {
	t.Helper()
	return blocksIn(t, root, "")
}

// blocksIn returns every fenced block whose language is lang in the repository's
// markdown files (those under testdata aside).
func blocksIn(t *testing.T, root, lang string) []block {
	t.Helper()
	var out []block
	eachFile(t, root, false, func(rel string, text []byte) {
		var cur *block
		prev := ""
		for i, raw := range strings.Split(string(text), "\n") {
			line := strings.TrimSpace(raw)
			switch {
			case cur != nil && line == "```":
				if cur.lang == lang {
					out = append(out, *cur)
				}
				cur = nil
			case cur != nil:
				cur.lines = append(cur.lines, strings.TrimRight(raw, " \t"))
			case strings.HasPrefix(line, "```"):
				cur = &block{file: rel, line: i + 1, lang: strings.TrimSpace(line[3:])}
				if m := markerRE.FindStringSubmatch(prev); m != nil {
					cur.marker = m[1]
				}
			}
			if line != "" {
				prev = line
			}
		}
		if cur != nil {
			t.Errorf("%s:%d: a fenced block that never ends", rel, cur.line)
		}
	}, ".md")
	return out
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// mqfault builds the command once per test binary and returns its path.
func mqfault(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "doccheck")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "mqfault")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/mqfault")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/mqfault: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// eachFile calls visit with the path relative to root and the text of
// every file of the repository whose name ends in one of suffixes, outside
// .git and node_modules, and outside testdata unless withTestdata.
func eachFile(t *testing.T, root string, withTestdata bool, visit func(rel string, text []byte), suffixes ...string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" || n == "testdata" && !withTestdata {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.ContainsFunc(suffixes, func(x string) bool { return strings.HasSuffix(path, x) }) {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		visit(rel, text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// run runs mqfault with args from the repository's root and returns its stdout.
// The command must exit with status want.
func run(t *testing.T, want int, args ...string) string {
	t.Helper()
	cmd := exec.Command(mqfault(t), args...)
	cmd.Dir = repoRoot(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil && want == 0:
	case errors.As(err, &exit) && exit.ExitCode() == want && want != 0:
	default:
		t.Fatalf("mqfault %s: %v, want exit status %d\n%s", strings.Join(args, " "), err, want, stderr.String())
	}
	return stdout.String()
}

// outputKindRE parses an output marker's kind: "output" (exit 0) or
// "output (exit N)".
var outputKindRE = regexp.MustCompile(`^output(?:\s*\(exit (\d+)\))?$`)

func TestPlainBlocks(t *testing.T) {
	root := repoRoot(t)
	outputs := map[string]string{} // exit status and command line -> stdout, each run once
	for _, b := range plainBlocks(t, root) {
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		kind, arg, _ := strings.Cut(b.marker, ":")
		arg = strings.TrimSpace(arg)
		kind = strings.TrimSpace(kind)
		want := 0
		if m := outputKindRE.FindStringSubmatch(kind); m != nil {
			kind = "output"
			if m[1] != "" {
				want, _ = strconv.Atoi(m[1])
			}
		}
		switch kind {
		case "output":
			args := strings.Fields(arg)
			if len(args) == 0 || args[0] != "mqfault" {
				t.Errorf("%s: <!-- output: %s -->: the command must be mqfault ARGS", where, arg)
				continue
			}
			key := fmt.Sprintf("%d %s", want, arg)
			out, ok := outputs[key]
			if !ok {
				out = run(t, want, args[1:]...)
				outputs[key] = out
			}
			if !containsRun(lines(out), b.lines) {
				t.Errorf("%s: the block is not what `%s` prints.\n--- the block\n%s\n--- the output\n%s", where, arg, strings.Join(b.lines, "\n"), out)
			}
		case "synopsis":
			checkSynopsis(t, where, b.lines)
		case "tree":
			for i, l := range b.lines {
				f := strings.Fields(l)
				if len(f) == 0 {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, strings.TrimSuffix(f[0], "/"))); err != nil {
					t.Errorf("%s: line %d names %s, which the repository does not have", where, i+1, f[0])
				}
			}
		case "text":
			if arg == "" {
				t.Errorf("%s: <!-- text: WHY -->: say why the block cannot be checked", where)
			}
		default:
			t.Errorf("%s: a fenced block without a language needs a comment on the line before it saying what it is "+
				"(<!-- output: mqfault ARGS -->, <!-- synopsis -->, <!-- tree --> or <!-- text: WHY -->), got %q", where, b.marker)
		}
	}
}

// lines splits text into lines without trailing spaces.
func lines(text string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, strings.TrimRight(sc.Text(), " \t"))
	}
	return out
}

// containsRun says whether want occurs in have as a contiguous run.
func containsRun(have, want []string) bool {
	if len(want) == 0 {
		return false
	}
	for i := 0; i+len(want) <= len(have); i++ {
		if slices.Equal(have[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

var flagRE = regexp.MustCompile(`(?:^|[\s\[|(])(--?[a-z][a-z0-9-]*)`)

// checkSynopsis checks each "mqfault COMMAND ..." line of a synopsis against the
// command's help: every flag it names exists, and together the lines of a command name
// all of its flags.
func checkSynopsis(t *testing.T, where string, block []string) {
	t.Helper()
	named := map[string]map[string]bool{}
	var order []string
	cmd := ""
	for _, l := range block {
		if code, _, _ := strings.Cut(l, "#"); strings.HasPrefix(l, "mqfault ") {
			f := strings.Fields(code)
			cmd = f[1]
			if named[cmd] == nil {
				named[cmd] = map[string]bool{}
				order = append(order, cmd)
			}
			l = code
		} else if cmd == "" || !strings.HasPrefix(l, " ") {
			t.Errorf("%s: synopsis line %q is neither `mqfault COMMAND ...` nor its continuation", where, l)
			continue
		} else {
			l = code
		}
		for _, m := range flagRE.FindAllStringSubmatch(l, -1) {
			named[cmd][m[1]] = true
		}
	}
	for _, c := range order {
		help := helpFlags(t, c)
		for f := range named[c] {
			if f == "--version" && c == "version" {
				continue
			}
			if !help[f] {
				t.Errorf("%s: the synopsis gives `mqfault %s` a flag %s that its help does not list", where, c, f)
			}
		}
		for f := range help {
			if !named[c][f] {
				t.Errorf("%s: the synopsis of `mqfault %s` leaves out its flag %s", where, c, f)
			}
		}
	}
}

var helpFlagRE = regexp.MustCompile(`^\s+(--?[a-z][a-z0-9-]*)`)

// helpFlags returns the flags `mqfault help COMMAND` lists.
func helpFlags(t *testing.T, command string) map[string]bool {
	t.Helper()
	flags := map[string]bool{}
	for _, l := range lines(run(t, 0, "help", command)) {
		if m := helpFlagRE.FindStringSubmatch(l); m != nil {
			flags[m[1]] = true
		}
	}
	return flags
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
