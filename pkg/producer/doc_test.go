package producer

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocNamesEveryFile keeps doc.go's reading list whole: every file of the
// package (tests aside) is named in it.
func TestDocNamesEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) < 10 {
		t.Fatalf("Glob(*.go) = %d files, %v: not the package's files", len(files), err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "doc.go" {
			continue
		}
		if !regexp.MustCompile(`[ (]` + regexp.QuoteMeta(f) + `[ ),;:\n]`).Match(doc) {
			t.Errorf("doc.go's reading list does not name %s", f)
		}
	}
}
