package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, that every failure is a
// located *Error, and that every accepted configuration is normalised and
// survives a trip through Redacted. The seed corpus under
// testdata/fuzz/FuzzParse holds the example and the testdata files.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yml")
	for _, name := range append(files, "../../config.example.yaml") {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.yml")
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error: %v", err, err)
			}
			if c != nil {
				t.Fatal("Parse returned a config with an error")
			}
			return
		}
		if len(c.Targets) == 0 {
			t.Fatal("accepted a config without targets")
		}
		if !slices.IsSorted(c.Global.Windows) || !slices.IsSorted(c.Global.Quantiles) {
			t.Fatalf("windows %v or quantiles %v not sorted", c.Global.Windows, c.Global.Quantiles)
		}
		for _, s := range c.SLOs {
			if !(s.Goal > 0 && s.Goal < 1) {
				t.Fatalf("accepted goal %v", s.Goal)
			}
		}
		out, err := c.Redacted()
		if err != nil {
			t.Fatalf("Redacted: %v", err)
		}
		if _, err := Parse(out, "redacted.yml"); err != nil {
			t.Fatalf("redacted config does not load: %v\n%s", err, out)
		}
	})
}
