package doccheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// section returns the text of the markdown section whose heading line is heading,
// up to the next heading of the same level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("no section %q", heading)
	}
	rest := doc[start+len(heading)+2:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if end := strings.Index(rest, "\n"+level); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

var goModBlock = regexp.MustCompile("(?s)```go\\.mod\n(.*?)```")

// goModBlocks returns the bodies of the ```go.mod fenced blocks of text.
func goModBlocks(text string) []string {
	var out []string
	for _, m := range goModBlock.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReadmeInstall builds a module outside the repository from the core's go.mod lines
// in README.md's Install section, exactly as written there but for the checkout's path,
// and checks that the integration's lines there are the ones its own README gives (its
// ci.sh builds a consumer from them). No network: the consumer's go.sum starts as the
// root's and the module proxy is off.
func TestReadmeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goModBlocks(section(t, string(readme), "## Install"))
	if len(blocks) != 2 {
		t.Fatalf("README's Install section has %d go.mod blocks, want 2 (the core, the integration)", len(blocks))
	}
	const placeholder = "/src/mqfault"
	for i, b := range blocks {
		if !strings.Contains(b, placeholder) {
			t.Fatalf("go.mod block %d does not name the checkout as %s:\n%s", i+1, placeholder, b)
		}
	}

	integ, err := os.ReadFile(filepath.Join(root, "integrations", "rocketmqgo", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(integ), blocks[1]) {
		t.Errorf("integrations/rocketmqgo/README.md does not give the integration's go.mod lines of README's Install section:\n%s", blocks[1])
	}

	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.26.0\n\n" + strings.ReplaceAll(blocks[0], placeholder, root)
	write(t, filepath.Join(dir, "go.mod"), gomod)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sum))
	write(t, filepath.Join(dir, "main.go"), `package main

import (
	"fmt"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

func main() {
	s, err := latency.NewStrategy(latency.DefaultConfig())
	if err != nil {
		panic(err)
	}
	defer s.Close()
	cfg := config.DefaultConfig()
	fmt.Println(cfg.Validate() == nil, producer.DefaultConfig().RetryTimes, route.QueueFilter(nil) == nil)
}
`)
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "./..."}, {"vet", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s in a module with README's go.mod lines: %v\n%s\ngo.mod:\n%s", strings.Join(args, " "), err, out.String(), gomod)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
