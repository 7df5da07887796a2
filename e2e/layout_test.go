package e2e

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/vllm-slo-exporter/vllm-slo-exporter"

// harnessRoots are the top-level packages that test the product and ship
// in none of its binaries' code paths: they sit beside the product's
// packages (Go's flat layout) and are told apart by the import graph alone.
var harnessRoots = []string{"alertquality", "bench", "e2e", "reliability", "testlog"}

// TestProductImportsNoHarness reads the imports of every non-test Go file
// outside the harness and fails on one that imports a harness package:
// that edge is what keeps the flat layout readable (no product package
// depends on a test harness, so nothing of it reaches a user's binary).
func TestProductImportsNoHarness(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", path)
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
