package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// The Helm chart's tests render it with the helm binary that
// scripts/install-test-deps.sh pins, decode every rendered object strictly
// into the Kubernetes types of kubernetes_test.go, and check the places where
// its objects meet: the sidecar's --config.file and the ConfigMap mounted
// there, its target and vLLM's port, the port names the monitors scrape and
// the ports that carry them, the rules and the configuration, the dashboard
// and deploy/grafana/dashboard.json.

const (
	chartDir                     = "helm/vllm-slo-exporter"
	chartRulesPath               = chartDir + "/files/rules.yml"
	chartDashboardPath           = chartDir + "/files/dashboard.json"
	productionStackValues        = "helm/production-stack-values.yaml"
	productionStackPatch         = "helm/production-stack/slo-exporter-patch.yaml"
	productionStackKustomization = "helm/production-stack/kustomization.yaml"
	// sidecarName is the sidecar container's name in the chart.
	sidecarName = "slo-exporter"
)

// helmPath is the helm binary: the pinned one in $(go env GOPATH)/bin, where
// the install script puts it, else the first on PATH.
var helmPath = sync.OnceValue(func() string {
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "helm")
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p
			}
		}
	}
	p, _ := exec.LookPath("helm")
	return p
})

// needHelm returns helm's path. Without helm the test is skipped on a
// developer's machine and fails under CI=true, where the install script must
// have put it.
func needHelm(t *testing.T) string {
	t.Helper()
	p := helmPath()
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("helm is not installed; scripts/install-test-deps.sh installs it")
		}
		t.Skip("helm is not installed (scripts/install-test-deps.sh installs it)")
	}
	return p
}

// runHelm runs helm with its homes in a temporary directory and returns its
// standard output; it fails the test on a non-zero exit.
func runHelm(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := execHelm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func execHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(needHelm(t), args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &helmError{args: args, err: err, stderr: stderr.String() + stdout.String()}
	}
	return stdout.Bytes(), nil
}

type helmError struct {
	args   []string
	err    error
	stderr string
}

func (e *helmError) Error() string {
	return "helm " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

type serviceMonitor struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Endpoints []struct {
			Port     string `yaml:"port"`
			Path     string `yaml:"path"`
			Interval string `yaml:"interval"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

// rendered is what `helm template` printed, by kind.
type rendered struct {
	deployments     []deployment
	configMaps      map[string]configMap
	services        []service
	podMonitors     []podMonitor
	serviceMonitors []serviceMonitor
	rules           []prometheusRule
}

// helmValues are the --values files and --set flags of one rendering.
type helmValues struct {
	files []string
	set   []string
}

func (v helmValues) args() []string {
	var a []string
	for _, f := range v.files {
		a = append(a, "--values", f)
	}
	for _, s := range v.set {
		a = append(a, "--set", s)
	}
	return a
}

// renderChart runs `helm template` and decodes every object strictly.
func renderChart(t *testing.T, v helmValues) rendered {
	t.Helper()
	out := runHelm(t, append([]string{"template", "vllm-slo", chartDir, "--namespace", "llm"}, v.args()...)...)
	r := rendered{configMaps: map[string]configMap{}}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for i := 0; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template %v: document %d: %v", v, i, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		b, err := yaml.Marshal(&doc)
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
		}
		if err := yaml.Unmarshal(b, &head); err != nil {
			t.Fatal(err)
		}
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			var d deployment
			decodeStrict(t, head.Kind, b, &d)
			r.deployments = append(r.deployments, d)
		case "v1 ConfigMap":
			var c configMap
			decodeStrict(t, head.Kind, b, &c)
			r.configMaps[c.Metadata.Name] = c
		case "v1 Service":
			var s service
			decodeStrict(t, head.Kind, b, &s)
			r.services = append(r.services, s)
		case "monitoring.coreos.com/v1 PodMonitor":
			var p podMonitor
			decodeStrict(t, head.Kind, b, &p)
			r.podMonitors = append(r.podMonitors, p)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			var s serviceMonitor
			decodeStrict(t, head.Kind, b, &s)
			r.serviceMonitors = append(r.serviceMonitors, s)
		case "monitoring.coreos.com/v1 PrometheusRule":
			var p prometheusRule
			decodeStrict(t, head.Kind, b, &p)
			r.rules = append(r.rules, p)
		default:
			t.Errorf("helm template %v: unexpected object %s %s", v, head.APIVersion, head.Kind)
		}
	}
	return r
}

// decodeStrict decodes one YAML document into v, rejecting unknown fields.
func decodeStrict(t *testing.T, name string, b []byte, v any) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, b)
	}
}

// sidecarConfigMaps returns the ConfigMaps other than the dashboard's.
func (r rendered) sidecarConfigMaps() []configMap {
	var out []configMap
	for _, c := range r.configMaps {
		if c.Metadata.Labels["grafana_dashboard"] == "" {
			out = append(out, c)
		}
	}
	return out
}

func TestHelmLint(t *testing.T) {
	for _, v := range []helmValues{
		{},
		{set: []string{"vllm.enabled=false", "podSelector.app=vllm"}},
		{set: []string{"monitor.kind=serviceMonitor"}},
		{files: []string{productionStackValues}},
	} {
		runHelm(t, append([]string{"lint", "--strict", chartDir}, v.args()...)...)
	}
	// The schema turns away a misspelt key and a monitor kind it lacks, and
	// the templates a disabled vLLM without pods to select.
	for _, c := range []struct {
		set, want string
	}{
		{"vlm.enabled=false", "additional properties 'vlm' not allowed"},
		{"monitor.kind=PodMonitor", "/monitor/kind"},
		{"vllm.enabled=false", "needs podSelector"},
	} {
		_, err := execHelm(t, "template", chartDir, "--set", c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("helm template --set %s: error %v, want one saying %q", c.set, err, c.want)
		}
	}
}

// TestHelmChartDefault renders the default values: vLLM and the sidecar in
// one pod, as deploy/kubernetes/ has them.
func TestHelmChartDefault(t *testing.T) {
	r := renderChart(t, helmValues{})
	if len(r.deployments) != 1 || len(r.services) != 1 || len(r.podMonitors) != 1 || len(r.serviceMonitors) != 0 ||
		len(r.rules) != 1 || len(r.configMaps) != 2 {
		t.Fatalf("rendered %d Deployments, %d Services, %d PodMonitors, %d ServiceMonitors, %d PrometheusRules, %d ConfigMaps; want 1, 1, 1, 0, 1, 2",
			len(r.deployments), len(r.services), len(r.podMonitors), len(r.serviceMonitors), len(r.rules), len(r.configMaps))
	}
	dep := r.deployments[0]
	pod := dep.Spec.Template
	if !subset(dep.Spec.Selector.MatchLabels, pod.Metadata.Labels) || !subset(r.services[0].Spec.Selector, pod.Metadata.Labels) ||
		!subset(r.podMonitors[0].Spec.Selector.MatchLabels, pod.Metadata.Labels) {
		t.Errorf("the Deployment's, Service's or PodMonitor's selector does not select the pod's labels %v", pod.Metadata.Labels)
	}
	if pod.Spec.SecurityContext.SeccompProfile.Type != "RuntimeDefault" {
		t.Error("pod seccompProfile is not RuntimeDefault")
	}
	vllm, side := podContainer(pod.Spec.Containers, "vllm"), podContainer(pod.Spec.Containers, sidecarName)
	if vllm == nil || side == nil {
		t.Fatalf("the pod must hold containers vllm and %s: %+v", sidecarName, pod.Spec.Containers)
	}
	if !strings.HasPrefix(vllm.Image, "vllm/vllm-openai:") || vllm.Resources.Limits["nvidia.com/gpu"] != "1" {
		t.Errorf("vLLM image %q, GPU limit %q; want vllm/vllm-openai with one nvidia.com/gpu", vllm.Image, vllm.Resources.Limits["nvidia.com/gpu"])
	}
	vllmPort := vllm.port("http")
	if vllmPort == 0 || !slices.Contains(vllm.Args, "--port="+strconv.Itoa(vllmPort)) {
		t.Errorf("vLLM listens with %v on container port http=%d; want --port equal to it", vllm.Args, vllmPort)
	}
	cfgText := checkSidecar(t, "default", *side, pod.Spec.Volumes, r, vllmPort)
	checkLikeKustomize(t, *vllm, *side, cfgText)
	checkService(t, r.services[0], pod.Spec.Containers, []string{"http", "slo-metrics"})
	checkPodMonitor(t, r.podMonitors[0], pod.Spec.Containers, []string{"http", "slo-metrics"})
	checkRules(t, r, cfgText)
	checkDashboard(t, r)
}

// TestHelmChartSidecarOnly renders vllm.enabled=false: every piece but the
// vLLM Deployment, and NOTES that give the container to add elsewhere.
func TestHelmChartSidecarOnly(t *testing.T) {
	v := helmValues{set: []string{"vllm.enabled=false", "podSelector.app=vllm", "vllm.portName=api"}}
	r := renderChart(t, v)
	if len(r.deployments) != 0 || len(r.services) != 1 || len(r.podMonitors) != 1 || len(r.rules) != 1 || len(r.configMaps) != 2 {
		t.Fatalf("rendered %d Deployments, %d Services, %d PodMonitors, %d PrometheusRules, %d ConfigMaps; want 0, 1, 1, 1, 2",
			len(r.deployments), len(r.services), len(r.podMonitors), len(r.rules), len(r.configMaps))
	}
	selector := map[string]string{"app": "vllm"}
	if !maps.Equal(r.services[0].Spec.Selector, selector) || !maps.Equal(r.podMonitors[0].Spec.Selector.MatchLabels, selector) {
		t.Errorf("Service selector %v, PodMonitor selector %v; want podSelector %v",
			r.services[0].Spec.Selector, r.podMonitors[0].Spec.Selector.MatchLabels, selector)
	}

	// The NOTES printed by `helm install` hold the container and volumes to
	// add to the other chart's pods: they must mount this release's ConfigMap.
	notes := renderNotes(t, v)
	start := strings.Index(notes, "\ncontainers:\n")
	end := -1
	if start >= 0 {
		if n := strings.Index(notes[start+1:], "\n\n"); n >= 0 {
			end = start + 1 + n
		}
	}
	if start < 0 || end < 0 {
		t.Fatalf("NOTES lack the containers and volumes to add:\n%s", notes)
	}
	var snippet struct {
		Containers []container `yaml:"containers"`
		Volumes    []volume    `yaml:"volumes"`
	}
	decodeStrict(t, "NOTES", []byte(notes[start:end]), &snippet)
	if len(snippet.Containers) != 1 {
		t.Fatalf("NOTES give %d containers, want the sidecar", len(snippet.Containers))
	}
	// The other chart's vLLM: port 8000 named api, as set above.
	vllm := container{Name: "vllm", Ports: []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	}{{"api", 8000}}}
	cfgText := checkSidecar(t, "NOTES", snippet.Containers[0], snippet.Volumes, r, 8000)
	pod := []container{vllm, snippet.Containers[0]}
	checkService(t, r.services[0], pod, []string{"api", "slo-metrics"})
	checkPodMonitor(t, r.podMonitors[0], pod, []string{"api", "slo-metrics"})
	checkRules(t, r, cfgText)
	checkDashboard(t, r)
}

// TestHelmChartServiceMonitor renders monitor.kind=serviceMonitor: the
// ServiceMonitor selects the Service and scrapes its ports by name.
func TestHelmChartServiceMonitor(t *testing.T) {
	r := renderChart(t, helmValues{set: []string{"monitor.kind=serviceMonitor"}})
	if len(r.podMonitors) != 0 || len(r.serviceMonitors) != 1 || len(r.services) != 1 || len(r.deployments) != 1 {
		t.Fatalf("rendered %d PodMonitors, %d ServiceMonitors, %d Services, %d Deployments; want 0, 1, 1, 1",
			len(r.podMonitors), len(r.serviceMonitors), len(r.services), len(r.deployments))
	}
	sm, svc := r.serviceMonitors[0], r.services[0]
	if !subset(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels) {
		t.Errorf("ServiceMonitor selector %v does not select the Service's labels %v", sm.Spec.Selector.MatchLabels, svc.Metadata.Labels)
	}
	pod := r.deployments[0].Spec.Template
	checkService(t, svc, pod.Spec.Containers, []string{"http", "slo-metrics"})
	svcPorts := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = true
	}
	var scraped []string
	for _, e := range sm.Spec.Endpoints {
		if e.Path != "/metrics" || e.Interval == "" {
			t.Errorf("ServiceMonitor endpoint %+v: want path /metrics and an interval", e)
		}
		if !svcPorts[e.Port] {
			t.Errorf("ServiceMonitor scrapes port %q, which the Service does not name", e.Port)
		}
		scraped = append(scraped, e.Port)
	}
	slices.Sort(scraped)
	if !slices.Equal(scraped, []string{"http", "slo-metrics"}) {
		t.Errorf("ServiceMonitor scrapes %v, want vLLM (http) and the sidecar (slo-metrics)", scraped)
	}
}

// productionStackPodLabels are the labels production-stack's chart (vllm-stack
// 0.1.12, templates/deployment-vllm-multi.yaml with chart.engineStandardLabels)
// puts on the pods and the Deployment of a model "llama3" in release "vllm".
var productionStackPodLabels = map[string]string{
	"model":                        "llama3",
	"helm-release-name":            "vllm",
	"app.kubernetes.io/name":       "llama3",
	"app.kubernetes.io/instance":   "vllm",
	"app.kubernetes.io/component":  "serving-engine",
	"app.kubernetes.io/part-of":    "vllm-stack",
	"app.kubernetes.io/managed-by": "helm",
}

// TestHelmChartProductionStack renders production-stack-values.yaml and
// checks the post-renderer's patch against it: the patch adds exactly the
// chart's sidecar, which mounts the ConfigMap this rendering holds and serves
// the port its PodMonitor scrapes, on the pods it selects.
func TestHelmChartProductionStack(t *testing.T) {
	r := renderChart(t, helmValues{files: []string{productionStackValues}})
	if len(r.deployments) != 0 || len(r.podMonitors) != 1 || len(r.rules) != 1 {
		t.Fatalf("rendered %d Deployments, %d PodMonitors, %d PrometheusRules; want 0, 1, 1", len(r.deployments), len(r.podMonitors), len(r.rules))
	}
	var patch deployment
	readYAML(t, "deploy/"+productionStackPatch, &patch)
	if patch.APIVersion != "apps/v1" || patch.Kind != "Deployment" || len(patch.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%s: want a Deployment patch with one container, got %s %s with %d", productionStackPatch,
			patch.APIVersion, patch.Kind, len(patch.Spec.Template.Spec.Containers))
	}

	// The patch is the chart's own sidecar: what the Deployment would hold
	// with the same values and vllm.enabled=true.
	own := renderChart(t, helmValues{files: []string{productionStackValues}, set: []string{"vllm.enabled=true"}})
	if len(own.deployments) != 1 {
		t.Fatal("vllm.enabled=true rendered no Deployment")
	}
	ownPod := own.deployments[0].Spec.Template.Spec
	ownSide := podContainer(ownPod.Containers, sidecarName)
	if ownSide == nil || !reflect.DeepEqual(patch.Spec.Template.Spec.Containers[0], *ownSide) {
		t.Errorf("%s: the container differs from the chart's sidecar for %s; want\n%+v\ngot\n%+v", productionStackPatch,
			productionStackValues, ownSide, patch.Spec.Template.Spec.Containers[0])
	}
	var ownVolumes []volume
	for _, v := range ownPod.Volumes {
		if strings.HasPrefix(v.Name, "vllm-slo-exporter-") {
			ownVolumes = append(ownVolumes, v)
		}
	}
	if !reflect.DeepEqual(patch.Spec.Template.Spec.Volumes, ownVolumes) {
		t.Errorf("%s: volumes %+v, want the chart's %+v", productionStackPatch, patch.Spec.Template.Spec.Volumes, ownVolumes)
	}

	// The merge puts the sidecar before vllm; kubectl logs and exec stay on vLLM.
	if a := patch.Spec.Template.Metadata.Annotations["kubectl.kubernetes.io/default-container"]; a != "vllm" {
		t.Errorf("%s: kubectl.kubernetes.io/default-container=%q, want production-stack's vllm", productionStackPatch, a)
	}

	// The patched pod: production-stack's vllm container (port 8000 named
	// container-port, its chart's defaults) and the sidecar.
	side := patch.Spec.Template.Spec.Containers[0]
	vllm := container{Name: "vllm", Ports: []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	}{{"container-port", 8000}}}
	cfgText := checkSidecar(t, "production-stack", side, patch.Spec.Template.Spec.Volumes, r, 8000)
	pod := []container{vllm, side}
	checkPodMonitor(t, r.podMonitors[0], pod, []string{"container-port", "slo-metrics"})
	if !subset(r.podMonitors[0].Spec.Selector.MatchLabels, productionStackPodLabels) {
		t.Errorf("PodMonitor selector %v does not select production-stack's engine pods %v", r.podMonitors[0].Spec.Selector.MatchLabels, productionStackPodLabels)
	}
	for _, s := range r.services {
		if !subset(s.Spec.Selector, productionStackPodLabels) {
			t.Errorf("Service selector %v does not select production-stack's engine pods", s.Spec.Selector)
		}
		checkService(t, s, pod, []string{"container-port", "slo-metrics"})
	}
	checkRules(t, r, cfgText)

	// The post-renderer patches the Deployments production-stack labels as
	// engines.
	var k struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Resources  []string `yaml:"resources"`
		Patches    []struct {
			Path   string `yaml:"path"`
			Target struct {
				Kind          string `yaml:"kind"`
				LabelSelector string `yaml:"labelSelector"`
			} `yaml:"target"`
		} `yaml:"patches"`
	}
	readYAML(t, "deploy/"+productionStackKustomization, &k)
	if len(k.Patches) != 1 || k.Patches[0].Path != path.Base(productionStackPatch) || k.Patches[0].Target.Kind != "Deployment" {
		t.Fatalf("%s: patches %+v, want %s on Deployments", productionStackKustomization, k.Patches, path.Base(productionStackPatch))
	}
	key, value, ok := strings.Cut(k.Patches[0].Target.LabelSelector, "=")
	if !ok || productionStackPodLabels[key] != value || strings.ContainsAny(value, ",!") {
		t.Errorf("%s: labelSelector %q does not select production-stack's engine Deployments", productionStackKustomization, k.Patches[0].Target.LabelSelector)
	}
}

// renderNotes returns templates/NOTES.txt rendered with the values. `helm
// install --dry-run` wants a cluster and `helm template` leaves NOTES out, so
// a copy of the chart renders the same text, through tpl, into a ConfigMap.
func renderNotes(t *testing.T, v helmValues) string {
	t.Helper()
	chart := filepath.Join(t.TempDir(), "vllm-slo-exporter")
	if err := os.CopyFS(chart, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(chartDir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chart, "notes-under-test.txt"), notes, 0o644); err != nil {
		t.Fatal(err)
	}
	const tmpl = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n" +
		"  notes: {{ tpl (.Files.Get \"notes-under-test.txt\") . | quote }}\n"
	if err := os.WriteFile(filepath.Join(chart, "templates", "notes-under-test.yaml"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runHelm(t, append([]string{"template", "vllm-slo", chart, "--namespace", "llm",
		"--show-only", "templates/notes-under-test.yaml"}, v.args()...)...)
	var cm configMap
	decodeStrict(t, "NOTES", out, &cm)
	return cm.Data["notes"]
}

// podContainer returns the container with the given name, or nil.
func podContainer(cs []container, name string) *container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// checkSidecar checks the sidecar against what it meets: --config.file names
// a key of a ConfigMap the release renders, mounted from volumes at its
// directory; that configuration passes check-config, keeps its state on a
// writable volume and scrapes vLLM over loopback on vllmPort; the listen
// addresses are the ports it declares and the probes go to the probe port.
// It returns the configuration's text.
func checkSidecar(t *testing.T, name string, side container, volumes []volume, r rendered, vllmPort int) string {
	t.Helper()
	cfgPath, ok := flagValue(side.Args, "config.file")
	if !ok {
		t.Fatalf("%s: the sidecar has no --config.file", name)
	}
	mount := side.mountAt(path.Dir(cfgPath))
	var cmName string
	for _, v := range volumes {
		if v.Name == mount && v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	cm, found := r.configMaps[cmName]
	text, inMap := cm.Data[path.Base(cfgPath)]
	if cmName == "" || !found || !inMap {
		t.Fatalf("%s: --config.file=%s: no rendered ConfigMap with key %q is mounted at %s (volume %q, ConfigMap %q)",
			name, cfgPath, path.Base(cfgPath), path.Dir(cfgPath), mount, cmName)
	}
	if cms := r.sidecarConfigMaps(); len(cms) != 1 || cms[0].Metadata.Name != cmName {
		t.Errorf("%s: the release renders %d configuration ConfigMaps; want only %q", name, len(cms), cmName)
	}
	checkConfig(t, name, text)
	state, urls := configFields(t, name, text)
	stateMount := side.mountAt(path.Dir(state))
	writable := false
	for _, v := range volumes {
		if v.Name == stateMount && (v.EmptyDir != nil || v.PersistentVolumeClaim != nil) {
			writable = true
		}
	}
	if state == "" || !writable {
		t.Errorf("%s: state_file %q is not on an emptyDir or PVC mounted in the sidecar", name, state)
	}
	if want := []string{"http://127.0.0.1:" + strconv.Itoa(vllmPort) + "/metrics"}; !slices.Equal(urls, want) {
		t.Errorf("%s: the sidecar scrapes %v, want vLLM in its pod at %v", name, urls, want)
	}

	listen, _ := flagValue(side.Args, "web.listen-address")
	probe, _ := flagValue(side.Args, "web.probe-listen-address")
	if p := side.port("slo-metrics"); p == 0 || portOf(listen) != strconv.Itoa(p) {
		t.Errorf("%s: --web.listen-address=%q, container port slo-metrics=%d; want the same port", name, listen, p)
	}
	probePort := 0
	for _, p := range side.Ports {
		if portOf(probe) == strconv.Itoa(p.ContainerPort) {
			probePort = p.ContainerPort
		}
	}
	if probePort == 0 || probePort == side.port("slo-metrics") {
		t.Errorf("%s: --web.probe-listen-address=%q is not a port of its own on the container", name, probe)
	}
	for _, p := range []struct {
		kind  string
		probe *httpProbe
		path  string
	}{{"liveness", side.LivenessProbe, "/-/healthy"}, {"readiness", side.ReadinessProbe, "/-/ready"}} {
		if p.probe == nil || p.probe.HTTPGet.Path != p.path || side.port(p.probe.HTTPGet.Port) != probePort {
			t.Errorf("%s: sidecar %s probe %+v, want GET %s on the probe port %d", name, p.kind, p.probe, p.path, probePort)
		}
	}
	if !slices.Contains(side.Args, "--web.enable-lifecycle") {
		t.Errorf("%s: sidecar args %v lack --web.enable-lifecycle", name, side.Args)
	}
	return text
}

// checkLikeKustomize holds the chart's defaults to deploy/kubernetes/: the
// same configuration in meaning, and the same probes, resources and
// security context in both containers.
func checkLikeKustomize(t *testing.T, vllm, side container, cfgText string) {
	t.Helper()
	var dep deployment
	var cm configMap
	readYAML(t, "deploy/kubernetes/deployment.yaml", &dep)
	readYAML(t, "deploy/kubernetes/configmap.yaml", &cm)
	if !reflect.DeepEqual(yamlMeaning(t, cfgText), yamlMeaning(t, cm.Data["config.yaml"])) {
		t.Errorf("the chart's default configuration differs from deploy/kubernetes/configmap.yaml's:\n%s", cfgText)
	}
	kVLLM := podContainer(dep.Spec.Template.Spec.Containers, "vllm")
	kSide := podContainer(dep.Spec.Template.Spec.Containers, sidecarName)
	if kVLLM == nil || kSide == nil {
		t.Fatal("deploy/kubernetes/deployment.yaml lacks the vllm or slo-exporter container")
	}
	for _, c := range []struct {
		name      string
		got, want container
	}{{"vllm", vllm, *kVLLM}, {sidecarName, side, *kSide}} {
		for _, p := range []struct {
			kind      string
			got, want *httpProbe
		}{
			{"liveness", c.got.LivenessProbe, c.want.LivenessProbe},
			{"readiness", c.got.ReadinessProbe, c.want.ReadinessProbe},
			{"startup", c.got.StartupProbe, c.want.StartupProbe},
		} {
			if (p.got == nil) != (p.want == nil) || p.got != nil && (p.got.HTTPGet.Path != p.want.HTTPGet.Path ||
				c.got.port(p.got.HTTPGet.Port) != c.want.port(p.want.HTTPGet.Port) ||
				p.got.PeriodSeconds != p.want.PeriodSeconds || p.got.FailureThreshold != p.want.FailureThreshold) {
				t.Errorf("%s %s probe %+v differs from deploy/kubernetes/deployment.yaml's %+v", c.name, p.kind, p.got, p.want)
			}
		}
		if !reflect.DeepEqual(c.got.Resources, c.want.Resources) || !reflect.DeepEqual(c.got.SecurityContext, c.want.SecurityContext) {
			t.Errorf("%s resources or securityContext differ from deploy/kubernetes/deployment.yaml's", c.name)
		}
	}
	if side.Image != kSide.Image {
		t.Errorf("sidecar image %q, deploy/kubernetes has %q", side.Image, kSide.Image)
	}
}

// yamlMeaning decodes a YAML text into plain values with every number a
// float64, so that 2 and 2.0 (Helm's toYaml writes the first) compare equal.
func yamlMeaning(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkService checks that the Service exposes the ports named in want and
// that each one's targetPort names a port of the pod's containers.
func checkService(t *testing.T, svc service, pod []container, want []string) {
	t.Helper()
	var names []string
	for _, p := range svc.Spec.Ports {
		names = append(names, p.Name)
		if containerPort(pod, p.TargetPort) != p.Port {
			t.Errorf("Service port %s (%d) targets %q, which is not a container port %d in the pod", p.Name, p.Port, p.TargetPort, p.Port)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("Service ports %v, want %v", names, want)
	}
}

// checkPodMonitor checks that the PodMonitor scrapes /metrics on the ports
// named in want, each a port of the pod's containers.
func checkPodMonitor(t *testing.T, pm podMonitor, pod []container, want []string) {
	t.Helper()
	var scraped []string
	for _, e := range pm.Spec.PodMetricsEndpoints {
		if e.Path != "/metrics" || e.Interval == "" {
			t.Errorf("PodMonitor endpoint %+v: want path /metrics and an interval", e)
		}
		if containerPort(pod, e.Port) == 0 {
			t.Errorf("PodMonitor scrapes port %q, which no container of the pod names", e.Port)
		}
		scraped = append(scraped, e.Port)
	}
	slices.Sort(scraped)
	if !slices.Equal(scraped, want) {
		t.Errorf("PodMonitor scrapes %v, want %v", scraped, want)
	}
}

// containerPort returns the number of the named port among the containers, or 0.
func containerPort(pod []container, name string) int {
	for _, c := range pod {
		if p := c.port(name); p != 0 {
			return p
		}
	}
	return 0
}

// checkRules checks that the PrometheusRule's groups are what `rules` prints
// for the rendered configuration.
func checkRules(t *testing.T, r rendered, cfgText string) {
	t.Helper()
	if len(r.rules) != 1 {
		t.Fatalf("rendered %d PrometheusRules, want 1", len(r.rules))
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	printed := groups(t, "rules output", runBinary(t, "rules", "--config.file="+cfg))
	if len(r.rules[0].Spec.Groups) == 0 || !reflect.DeepEqual(r.rules[0].Spec.Groups, printed) {
		t.Errorf("the PrometheusRule's groups differ from `vllm-slo-exporter rules` for the rendered configuration; run: go test ./deploy -run TestHelmChartFiles -update")
	}
}

// checkDashboard checks the dashboard ConfigMap: labelled for Grafana's
// sidecar, holding deploy/grafana/dashboard.json byte for byte.
func checkDashboard(t *testing.T, r rendered) {
	t.Helper()
	want, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range r.configMaps {
		if c.Metadata.Labels["grafana_dashboard"] != "1" {
			continue
		}
		n++
		if len(c.Data) != 1 {
			t.Errorf("dashboard ConfigMap %s has %d keys, want 1", c.Metadata.Name, len(c.Data))
		}
		for k, v := range c.Data {
			if !strings.HasSuffix(k, ".json") || v != string(want) {
				t.Errorf("dashboard ConfigMap %s: key %q does not hold %s", c.Metadata.Name, k, dashboardPath)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d ConfigMaps labelled grafana_dashboard=1, want 1", n)
	}
}

// TestHelmChartFiles checks the chart's generated files without helm:
// files/rules.yml is what `rules` prints for values.yaml's exporter.config,
// and files/dashboard.json is deploy/grafana/dashboard.json. With -update it
// rewrites both.
func TestHelmChartFiles(t *testing.T) {
	var values struct {
		Exporter struct {
			Config yaml.Node `yaml:"config"`
		} `yaml:"exporter"`
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	cfgText, err := yaml.Marshal(&values.Exporter.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, cfgText, 0o644); err != nil {
		t.Fatal(err)
	}
	printed := runBinary(t, "rules", "--config.file="+cfg)
	dashboard, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(chartRulesPath, printed, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(chartDashboardPath, dashboard, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(chartRulesPath); err != nil || !bytes.Equal(got, printed) {
		t.Errorf("%s differs from `vllm-slo-exporter rules` for values.yaml's exporter.config (%v); run: go test ./deploy -run TestHelmChartFiles -update", chartRulesPath, err)
	}
	if got, err := os.ReadFile(chartDashboardPath); err != nil || !bytes.Equal(got, dashboard) {
		t.Errorf("%s differs from %s (%v); run: go test ./deploy -run TestHelmChartFiles -update", chartDashboardPath, dashboardPath, err)
	}
}
