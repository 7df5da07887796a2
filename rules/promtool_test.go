package rules

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// promtool returns the path of promtool. Without it the test is skipped
// locally but fails in CI (CI=true), where it must be installed.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is required in CI: %v", err)
		}
		t.Skipf("promtool not on PATH (install prometheus, or set CI=true to make this fail): %v", err)
	}
	return p
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %v: %v\n%s", args, err, out)
	}
}

// TestPromtoolCheckRules checks every generated rule file, the shipped ones
// and the table of configurations, with promtool check rules.
func TestPromtoolCheckRules(t *testing.T) {
	promtool(t)
	dir := t.TempDir()
	for _, c := range configCases {
		t.Run(c.name, func(t *testing.T) {
			out := generateString(t, c.yaml)
			path := filepath.Join(dir, c.name+".yml")
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			runPromtool(t, "check", "rules", path)
		})
	}
	for _, g := range generated {
		t.Run(filepath.Base(g.rules), func(t *testing.T) {
			runPromtool(t, "check", "rules", g.rules)
		})
	}
}

// TestPromtoolCheckConfig checks the shipped prometheus.yml and, through
// it, rules.yml.
func TestPromtoolCheckConfig(t *testing.T) {
	runPromtool(t, "check", "config", filepath.Join(deployDir, "prometheus.yml"))
}

// TestPromtoolTestRules replays a breach and a recovery on synthetic vLLM
// series and checks the page fires during the breach only.
func TestPromtoolTestRules(t *testing.T) {
	runPromtool(t, "test", "rules", filepath.Join(deployDir, "rules_test.yml"))
}
