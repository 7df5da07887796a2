package deploy

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestEveryYAMLParses decodes every YAML document under deploy/ (including
// deploy/prometheus), so that no shipped file is left unchecked; a Helm
// chart's templates/ are left to the Helm tests.
func TestEveryYAMLParses(t *testing.T) {
	var n int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// A Helm chart's templates are Go templates of YAML, not YAML: the
		// Helm tests parse what they render instead.
		if d.IsDir() && d.Name() == "templates" && fileExists(filepath.Join(filepath.Dir(path), "Chart.yaml")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".yaml")) {
			return nil
		}
		n++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		docs := 0
		for {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("%s: %v", path, err)
				break
			}
			if v == nil {
				continue
			}
			if _, ok := v.(map[string]any); !ok {
				t.Errorf("%s: document %d is %T, want a mapping", path, docs, v)
			}
			docs++
		}
		if docs == 0 {
			t.Errorf("%s: no YAML document", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("only %d YAML files found under deploy/", n)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
