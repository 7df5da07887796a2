package rules

import (
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// promtool returns the path of promtool (lookEngine).
func promtool(t *testing.T) string {
	t.Helper()
	return lookEngine(t, "promtool")
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
// series and checks the page fires during the breach only, the exporter's
// alerts and VLLMSLOHistogramsMissing, on Debian's promtool (2.x) and on
// Prometheus 3's (promtool3).
func TestPromtoolTestRules(t *testing.T) {
	for _, name := range []string{"promtool", "promtool3"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bin := lookEngine(t, name)
			if out, err := exec.Command(bin, "test", "rules", filepath.Join(deployDir, "rules_test.yml")).CombinedOutput(); err != nil {
				t.Fatalf("%s test rules: %v\n%s", name, err, out)
			}
		})
	}
}

// TestQueryOffset checks Options.QueryOffset: written on every group, the
// file passes Prometheus 3's promtool check and is refused by Debian's
// promtool (2.42, before the field existed), which takes the file without it.
func TestQueryOffset(t *testing.T) {
	cfg := parseConfig(t, configCases[1].yaml)
	opts := DefaultOptions()
	opts.QueryOffset = 5 * time.Second
	f, err := opts.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), "\n    query_offset: 5s\n"); got != len(f.Groups) || got == 0 {
		t.Fatalf("query_offset written %d times, want once for each of the %d groups", got, len(f.Groups))
	}
	path := filepath.Join(t.TempDir(), "offset.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(lookEngine(t, "promtool3"), "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool3 check rules refused query_offset: %v\n%s", err, out)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", path).CombinedOutput(); err == nil || !strings.Contains(string(out), "query_offset") {
		t.Errorf("promtool (2.x) took the file with query_offset (%v):\n%s", err, out)
	}
	if plain := generateString(t, configCases[1].yaml); strings.Contains(plain, "query_offset") {
		t.Error("Generate writes query_offset without the option")
	}
}

// TestVmalertConcurrency checks the group field vmalert's rule concurrency
// is written as: left out at 0, where promtool accepts the file and rejects
// it with the field (so Generate must leave it 0), and accepted by vmalert
// (-dryRun) when set.
func TestVmalertConcurrency(t *testing.T) {
	f := generateCase(t, configCases[1].yaml)
	dir := t.TempDir()
	write := func(name string, c int) string {
		t.Helper()
		cp := f.WithConcurrency(c)
		out, err := cp.YAML()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Count(string(out), "\n    concurrency: "), min(c, 1)*len(cp.Groups); got != want {
			t.Fatalf("concurrency %d: the field appears %d times, want %d", c, got, want)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	plain, concurrent := write("plain.yml", 0), write("concurrent.yml", 2)
	runPromtool(t, "check", "rules", plain)
	if out, err := exec.Command(promtool(t), "check", "rules", concurrent).CombinedOutput(); err == nil {
		t.Errorf("promtool accepted a group with the concurrency field:\n%s", out)
	}
	vmalert := lookEngine(t, "vmalert")
	if out, err := exec.Command(vmalert, "-dryRun", "-rule="+concurrent).CombinedOutput(); err != nil {
		t.Errorf("vmalert -dryRun refused concurrency 2: %v\n%s", err, out)
	}
}

// lookEngine returns the path of an engine's binary, on PATH or in
// GOPATH/bin (where make deps builds promtool3). Without it the test is
// skipped locally but fails in CI (CI=true), where make deps installs it.
func lookEngine(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if built := filepath.Join(build.Default.GOPATH, "bin", name); fileExists(built) {
			return built
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not on PATH (set CI=true to make this fail): %v", name, err)
	}
	return p
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
