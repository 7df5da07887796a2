package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite generated files (deploy/kubernetes/prometheusrule.yaml, the Helm chart's files/) instead of comparing")

// repoRoot is the module root, relative to this package's directory.
const repoRoot = ".."

// binary builds cmd/vllm-slo-exporter once per test run and returns its path.
var binary = sync.OnceValues(func() (string, error) {
	goTool, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		return "", fmt.Errorf("find the go tool: %w", err)
	}
	dir, err := os.MkdirTemp("", "deploy-test-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "vllm-slo-exporter")
	cmd := exec.Command(goTool, "build", "-o", out, "./cmd/vllm-slo-exporter")
	cmd.Dir = repoRoot
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/vllm-slo-exporter: %w\n%s", err, b)
	}
	return out, nil
})

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if path, err := binary(); err == nil {
		os.RemoveAll(filepath.Dir(path))
	}
	os.Exit(code)
}

// runBinary runs the exporter with args and returns its standard output; it
// fails the test on a non-zero exit.
func runBinary(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := execBinary(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// execBinary runs the exporter with args and returns its standard output, or
// an error with its standard error on a non-zero exit.
func execBinary(args ...string) ([]byte, error) {
	path, err := binary()
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("vllm-slo-exporter %s: %w\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// readYAML decodes one YAML document from a file under the repository into v,
// rejecting unknown fields when v is a struct.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkConfig runs `check-config` on a configuration text.
func checkConfig(t *testing.T, name, text string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runBinary(t, "check-config", "--config.file="+path)
	if !bytes.Contains(out, []byte("OK")) {
		t.Errorf("%s: check-config printed %q", name, out)
	}
}

// configFields decodes the fields of a configuration the deploy files rely on.
func configFields(t *testing.T, name, text string) (stateFile string, targetURLs []string) {
	t.Helper()
	var c struct {
		StateFile string `yaml:"state_file"`
		Targets   []struct {
			URL string `yaml:"url"`
		} `yaml:"targets"`
	}
	if err := yaml.Unmarshal([]byte(text), &c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, tg := range c.Targets {
		targetURLs = append(targetURLs, tg.URL)
	}
	return c.StateFile, targetURLs
}

// flagValue returns the value of --name=value in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}
