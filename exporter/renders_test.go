package exporter

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const sloPath = "github.com/vllm-slo-exporter/vllm-slo-exporter/slo"

// pendingSLOCalls are the calls to package slo that a renderer still makes,
// as "file: slo.Function". Each is a number the report does not carry yet;
// the entry goes when the report carries it.
var pendingSLOCalls = []string{}

// TestRenderersCallNoSLOFunction reads the syntax trees of packages exporter
// and console and fails on any call of a package-level function of package
// slo: those compute SLO numbers (or build them), which is the pipeline's
// job, so that /metrics and the pages can never disagree with the report.
// (Methods on slo values are not calls into the package's math by
// themselves, and a syntax tree cannot tell them apart from field reads, so
// they are left to review.)
func TestRenderersCallNoSLOFunction(t *testing.T) {
	funcs := packageFuncs(t, "../slo")
	if !funcs["Evaluate"] || !funcs["CostPerMillion"] {
		t.Fatalf("package slo's functions not found (got %d)", len(funcs))
	}
	var found []string
	for _, dir := range []string{"../exporter", "../internal/console"} {
		for _, f := range parseDir(t, dir) {
			name := localName(f.file, sloPath)
			if name == "" {
				continue
			}
			ast.Inspect(f.file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && funcs[sel.Sel.Name] {
					found = append(found, filepath.Base(dir)+"/"+filepath.Base(f.path)+": slo."+sel.Sel.Name)
				}
				return true
			})
		}
	}
	for _, c := range slices.Compact(slices.Sorted(slices.Values(found))) {
		if !slices.Contains(pendingSLOCalls, c) {
			t.Errorf("%s: a renderer computes an SLO number; put it in the report instead", c)
		}
	}
	for _, p := range pendingSLOCalls {
		if !slices.Contains(found, p) {
			t.Errorf("%s is gone: remove it from pendingSLOCalls", p)
		}
	}
}

type parsedFile struct {
	path string
	file *ast.File
}

// parseDir parses the non-test Go files of a directory.
func parseDir(t *testing.T, dir string) []parsedFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []parsedFile
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", p, err)
		}
		out = append(out, parsedFile{path: p, file: f})
	}
	if len(out) == 0 {
		t.Fatalf("no Go file in %s", dir)
	}
	return out
}

// packageFuncs lists the package-level functions (not methods) of a
// package's directory.
func packageFuncs(t *testing.T, dir string) map[string]bool {
	funcs := map[string]bool{}
	for _, f := range parseDir(t, dir) {
		for _, d := range f.file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.IsExported() {
				funcs[fd.Name.Name] = true
			}
		}
	}
	return funcs
}

// localName is the name a file imports path under, "" when it does not.
func localName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err != nil || p != path {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return filepath.Base(path)
	}
	return ""
}
