package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/sim"
)

var ablationName = regexp.MustCompile("`(" + sim.PresetName + "-[a-z0-9-]+)`")

// TestDocsNameRealAblations checks the ablation names the documentation gives: README's
// list under "The `mqfault` command" is exactly the simulator's ablations, in their
// order, and every `mqfault-NAME` quoted in any markdown file of the repository is one of
// them.
func TestDocsNameRealAblations(t *testing.T) {
	root := repoRoot(t)
	want := sim.AblationNames()

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := section(t, string(readme), "## The `mqfault` command")
	start := strings.Index(cmd, "one row each:")
	end := strings.Index(cmd, "(those whose")
	if start < 0 || end < start {
		t.Fatal("README's command section has no ablation list (\"one row each: ... (those whose\")")
	}
	var listed []string
	for _, m := range ablationName.FindAllStringSubmatch(cmd[start:end], -1) {
		listed = append(listed, m[1])
	}
	if !slices.Equal(listed, want) {
		t.Errorf("README lists the ablations\n  %s\nthe simulator has\n  %s", strings.Join(listed, ", "), strings.Join(want, ", "))
	}

	eachFile(t, root, true, func(rel string, text []byte) {
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range ablationName.FindAllStringSubmatch(line, -1) {
				if !slices.Contains(want, m[1]) {
					t.Errorf("%s:%d: %s is not an ablation of the simulator (%s)", rel, i+1, m[1], strings.Join(want, ", "))
				}
			}
		}
	}, ".md")
}
