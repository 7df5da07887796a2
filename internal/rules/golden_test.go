package rules

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
)

var update = flag.Bool("update", false, "rewrite the generated rule files under deploy/prometheus and testdata")

// deployDir holds the shipped Prometheus files.
const deployDir = "../../deploy/prometheus"

// generated pairs a configuration with the rule file generated from it.
var generated = []struct {
	config, rules string
}{
	{"../../config.example.yaml", filepath.Join(deployDir, "rules.yml")},
	{"testdata/promtool_test_config.yaml", filepath.Join(deployDir, "rules_test_rules.yml")},
}

func generateFile(t *testing.T, configFile string) []byte {
	t.Helper()
	cfg, err := config.Load(configFile)
	if err != nil {
		t.Fatalf("load %s: %v", configFile, err)
	}
	f, err := DefaultOptions().Generate(cfg)
	if err != nil {
		t.Fatalf("generate from %s: %v", configFile, err)
	}
	out, err := f.YAML()
	if err != nil {
		t.Fatalf("render rules of %s: %v", configFile, err)
	}
	return out
}

// TestShippedRulesUpToDate checks that the shipped rule files are exactly
// what Generate makes of their configurations; `go test ./internal/rules -update`
// rewrites them.
func TestShippedRulesUpToDate(t *testing.T) {
	for _, g := range generated {
		t.Run(filepath.Base(g.rules), func(t *testing.T) {
			got := generateFile(t, g.config)
			if *update {
				if err := os.WriteFile(g.rules, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(g.rules)
			if err != nil {
				t.Fatalf("read %s (run go test ./internal/rules -update): %v", g.rules, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from DefaultOptions().Generate(%s); run go test ./internal/rules -update and review the diff", g.rules, g.config)
			}
		})
	}
}
