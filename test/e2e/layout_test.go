package e2e

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/vllm-slo-exporter/vllm-slo-exporter"

// harnessRoots are the top-level folders that test or measure the product
// and ship in none of its binaries' code paths (docs/design.md, "Where a new
// file goes").
var harnessRoots = []string{"bench", "test"}

// TestProductImportsNoHarness reads the imports of every non-test Go file
// outside the harness and fails on one that imports a harness package:
// that edge is what keeps the layout honest (no product package depends on
// a test harness, so nothing of it reaches a user's binary).
func TestProductImportsNoHarness(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		top := strings.Split(filepath.ToSlash(rel), "/")[0]
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." || isHarness(top)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, modulePath+"/"); ok && isHarness(strings.Split(rest, "/")[0]) {
				t.Errorf("%s imports %s: a product package may not depend on the test harness", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d product files, want the whole module's", files)
	}
}

func isHarness(top string) bool { return slices.Contains(harnessRoots, top) }

// topLevelFolders is the module's table of contents: the product's public
// packages (scrape, slo, exporter), its binary (cmd), what ships beside it
// (deploy, docs), the daemon's inner packages (internal), the harness (test,
// bench) and the install scripts. docs/design.md says which new file goes where.
var topLevelFolders = []string{"bench", "cmd", "deploy", "docs", "exporter", "internal", "scrape", "scripts", "slo", "test"}

// TestTopLevelIsTheTableOfContents fails when a folder appears at the top
// level that the layout does not name: a new package belongs under internal/
// (the daemon), test/ (harness) or bench/ (measurements).
func TestTopLevelIsTheTableOfContents(t *testing.T) {
	entries, err := os.ReadDir(moduleRoot)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			got = append(got, e.Name())
		}
	}
	if !slices.Equal(got, topLevelFolders) {
		t.Errorf("top-level folders %v, want %v (see docs/design.md)", got, topLevelFolders)
	}
}
