package deploy

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// instruction is one Dockerfile instruction with continuation lines joined.
type instruction struct {
	cmd, args string
}

// parseDockerfile splits a Dockerfile into instructions, dropping comments
// and joining backslash-continued lines.
func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("%s: dangling continuation line", path)
	}
	return out
}

func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t, "docker/Dockerfile")
	var froms []int
	for i, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, i)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d FROM lines", len(froms))
	}

	// The builder's Go matches go.mod's language version.
	goMod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(goMod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	builder := ins[froms[0]].args
	if !strings.HasPrefix(builder, "golang:"+string(m[1])+" ") && !strings.HasPrefix(builder, "golang:"+string(m[1])+".") {
		t.Errorf("builder FROM %q does not use golang:%s (go.mod)", builder, m[1])
	}
	stage := ""
	if f := strings.Fields(builder); len(f) == 3 && strings.EqualFold(f[1], "AS") {
		stage = f[2]
	} else {
		t.Fatalf("builder FROM %q has no stage name", builder)
	}

	var build string
	for _, in := range ins[froms[0]:froms[len(froms)-1]] {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			build = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-ldflags", "version.Version=", "version.Revision=", "./cmd/vllm-slo-exporter"} {
		if !strings.Contains(build, want) {
			t.Errorf("go build %q lacks %s", build, want)
		}
	}
	out := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(build)
	if out == nil {
		t.Fatalf("go build %q names no output", build)
	}

	final := ins[froms[len(froms)-1]:]
	base := final[0].args
	if base != "scratch" && !(strings.HasPrefix(base, "gcr.io/distroless/static") && strings.HasSuffix(base, ":nonroot")) {
		t.Errorf("final image %q is neither scratch nor distroless static nonroot", base)
	}
	var user, entrypoint, cmdLine string
	var exposed []string
	copied := map[string]string{} // destination -> source
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "CMD":
			cmdLine = in.args
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "COPY":
			f := strings.Fields(in.args)
			src, dst := f[len(f)-2], f[len(f)-1]
			if slices.Contains(f, "--from="+stage) {
				src = "stage:" + src
			}
			copied[dst] = src
		}
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("final image runs as %q, want a non-root USER", user)
	}
	if !slices.Contains(exposed, "10042") {
		t.Errorf("EXPOSE %v lacks the default port 10042", exposed)
	}
	var ep, args []string
	if err := yaml.Unmarshal([]byte(entrypoint), &ep); err != nil || len(ep) != 1 {
		t.Fatalf("ENTRYPOINT %q is not a one-element exec form", entrypoint)
	}
	if copied[ep[0]] != "stage:"+out[1] {
		t.Errorf("ENTRYPOINT %s is not the binary built at %s (copied: %v)", ep[0], out[1], copied)
	}
	if err := yaml.Unmarshal([]byte(cmdLine), &args); err != nil {
		t.Fatalf("CMD %q is not exec form: %v", cmdLine, err)
	}
	cfg, ok := flagValue(args, "config.file")
	if !ok || copied[cfg] == "" {
		t.Errorf("CMD %v: --config.file is not a file the image holds (copied: %v)", args, copied)
	} else if _, err := os.Stat(filepath.Join(repoRoot, copied[cfg])); err != nil {
		t.Errorf("the image's configuration: %v", err)
	}
	if addr, _ := flagValue(args, "web.listen-address"); !strings.HasSuffix(addr, ":10042") {
		t.Errorf("CMD %v does not listen on :10042", args)
	}
}

// composeFile is the part of compose.yaml the tests read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       map[string]string `yaml:"build"`
	NetworkMode string            `yaml:"network_mode"`
	Command     []string          `yaml:"command"`
	Volumes     []string          `yaml:"volumes"`
	ReadOnly    bool              `yaml:"read_only"`
	CapDrop     []string          `yaml:"cap_drop"`
	Deploy      struct {
		Resources struct {
			Reservations struct {
				Devices []struct {
					Driver       string   `yaml:"driver"`
					Count        any      `yaml:"count"`
					Capabilities []string `yaml:"capabilities"`
				} `yaml:"devices"`
			} `yaml:"reservations"`
		} `yaml:"resources"`
	} `yaml:"deploy"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("docker/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

// splitVolume splits a short-syntax volume "src:dst[:mode]".
func splitVolume(v string) (src, dst, mode string) {
	f := strings.Split(v, ":")
	switch len(f) {
	case 2:
		return f[0], f[1], ""
	case 3:
		return f[0], f[1], f[2]
	}
	return v, "", ""
}

// mountedFrom returns the host path (relative to deploy/docker) or named
// volume mounted at dst in a service.
func (s composeService) mountedFrom(dst string) string {
	for _, v := range s.Volumes {
		src, d, _ := splitVolume(v)
		if d == dst {
			return src
		}
	}
	return ""
}

func TestCompose(t *testing.T) {
	c := readCompose(t)
	for _, name := range []string{"vllm", "vllm-slo-exporter", "prometheus", "alertmanager", "grafana"} {
		s, ok := c.Services[name]
		if !ok {
			t.Errorf("service %s missing", name)
			continue
		}
		// The shipped files address each other on 127.0.0.1.
		if s.NetworkMode != "host" {
			t.Errorf("service %s: network_mode %q, want host (the shipped files use 127.0.0.1)", name, s.NetworkMode)
		}
		for _, v := range s.Volumes {
			src, dst, _ := splitVolume(v)
			if dst == "" || !path.IsAbs(dst) {
				t.Errorf("service %s: volume %q has no absolute target", name, v)
			}
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(filepath.Join("docker", src)); err != nil {
					t.Errorf("service %s: bind mount %q: %v", name, v, err)
				}
			} else if _, ok := c.Volumes[src]; !ok {
				t.Errorf("service %s: named volume %q is not declared", name, src)
			}
		}
	}

	vllm := c.Services["vllm"]
	if !strings.HasPrefix(vllm.Image, "vllm/vllm-openai:") {
		t.Errorf("vllm image %q", vllm.Image)
	}
	devs := vllm.Deploy.Resources.Reservations.Devices
	if len(devs) != 1 || devs[0].Driver != "nvidia" || !slices.Contains(devs[0].Capabilities, "gpu") {
		t.Errorf("vllm has no nvidia GPU reservation: %+v", devs)
	}
	if port, _ := flagValue(vllm.Command, "port"); port != "8000" {
		t.Errorf("vllm --port=%q, want 8000", port)
	}

	side := c.Services["vllm-slo-exporter"]
	if df := filepath.Join("docker", side.Build["context"], side.Build["dockerfile"]); df != filepath.Join(repoRoot, "deploy", "docker", "Dockerfile") {
		t.Errorf("sidecar builds %s, want deploy/docker/Dockerfile with the repository as context", df)
	}
	if !side.ReadOnly || !slices.Contains(side.CapDrop, "ALL") {
		t.Errorf("sidecar: read_only %v, cap_drop %v", side.ReadOnly, side.CapDrop)
	}
	cfgPath, ok := flagValue(side.Command, "config.file")
	src := side.mountedFrom(cfgPath)
	if !ok || src == "" {
		t.Fatalf("sidecar --config.file=%q is not mounted", cfgPath)
	}
	text, err := os.ReadFile(filepath.Join("docker", src))
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, src, string(text))
	state, urls := configFields(t, src, string(text))
	if state == "" || side.mountedFrom(path.Dir(state)) == "" {
		t.Errorf("sidecar: state_file %q is not on a mounted volume", state)
	}
	if !slices.Contains(urls, "http://127.0.0.1:8000/metrics") {
		t.Errorf("sidecar config scrapes %v, not vLLM on 127.0.0.1:8000", urls)
	}

	prom := c.Services["prometheus"]
	promCfg, _ := flagValue(prom.Command, "config.file")
	if src := prom.mountedFrom(promCfg); filepath.Clean(src) != "../prometheus/prometheus.yml" {
		t.Fatalf("prometheus --config.file=%s comes from %q, want ../prometheus/prometheus.yml", promCfg, src)
	}
	var pc struct {
		RuleFiles []string `yaml:"rule_files"`
		Alerting  struct {
			Alertmanagers []struct {
				StaticConfigs []struct {
					Targets []string `yaml:"targets"`
				} `yaml:"static_configs"`
			} `yaml:"alertmanagers"`
		} `yaml:"alerting"`
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	b, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &pc); err != nil {
		t.Fatal(err)
	}
	if len(pc.RuleFiles) == 0 {
		t.Error("prometheus.yml loads no rule files")
	}
	for _, rf := range pc.RuleFiles {
		want := path.Join(path.Dir(promCfg), rf)
		if src := prom.mountedFrom(want); src == "" {
			t.Errorf("prometheus.yml loads %s, which compose does not mount", want)
		} else if _, err := os.Stat(filepath.Join("docker", src)); err != nil {
			t.Errorf("rules: %v", err)
		}
	}
	var scraped, alertmanagers []string
	for _, sc := range pc.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			scraped = append(scraped, s.Targets...)
		}
	}
	for _, am := range pc.Alerting.Alertmanagers {
		for _, s := range am.StaticConfigs {
			alertmanagers = append(alertmanagers, s.Targets...)
		}
	}
	sideAddr, _ := flagValue(side.Command, "web.listen-address")
	amAddr, _ := flagValue(c.Services["alertmanager"].Command, "web.listen-address")
	for _, want := range []struct {
		list []string
		port string
		what string
	}{
		{scraped, "8000", "vLLM"},
		{scraped, portOf(sideAddr), "the sidecar"},
		{alertmanagers, portOf(amAddr), "Alertmanager"},
	} {
		if !slices.Contains(want.list, "127.0.0.1:"+want.port) {
			t.Errorf("prometheus.yml does not reach %s on 127.0.0.1:%s (has %v)", want.what, want.port, want.list)
		}
	}

	graf := c.Services["grafana"]
	if src := graf.mountedFrom("/etc/grafana/provisioning"); filepath.Clean(src) != "../grafana/provisioning" {
		t.Errorf("grafana provisioning comes from %q", src)
	}
}

// portOf returns the port of a listen address ":10042" or "host:10042".
func portOf(addr string) string {
	_, port, _ := strings.Cut(addr, ":")
	return port
}
