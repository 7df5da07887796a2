package deploy

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The Kubernetes types below mirror the fields of the upstream API objects
// that the manifests use; manifests are decoded strictly into them, so a
// misspelt or misplaced field fails the test as it would fail kubectl.

type objectMeta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type httpProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

type container struct {
	Name            string   `yaml:"name"`
	Image           string   `yaml:"image"`
	ImagePullPolicy string   `yaml:"imagePullPolicy"`
	Args            []string `yaml:"args"`
	Ports           []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	LivenessProbe  *httpProbe `yaml:"livenessProbe"`
	ReadinessProbe *httpProbe `yaml:"readinessProbe"`
	StartupProbe   *httpProbe `yaml:"startupProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		RunAsUser                *int  `yaml:"runAsUser"`
		RunAsGroup               *int  `yaml:"runAsGroup"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

// port returns the container port with the given name, or 0.
func (c container) port(name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// mountAt returns the volume mounted at dir, or "".
func (c container) mountAt(dir string) string {
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) == path.Clean(dir) {
			return m.Name
		}
	}
	return ""
}

type volume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
	EmptyDir *struct {
		Medium    string `yaml:"medium"`
		SizeLimit string `yaml:"sizeLimit"`
	} `yaml:"emptyDir"`
	PersistentVolumeClaim *struct {
		ClaimName string `yaml:"claimName"`
	} `yaml:"persistentVolumeClaim"`
}

type deployment struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		Replicas int `yaml:"replicas"`
		Strategy struct {
			Type string `yaml:"type"`
		} `yaml:"strategy"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     struct {
				SecurityContext struct {
					SeccompProfile struct {
						Type string `yaml:"type"`
					} `yaml:"seccompProfile"`
				} `yaml:"securityContext"`
				Containers []container `yaml:"containers"`
				Volumes    []volume    `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type configMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

type service struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		Type     string            `yaml:"type"`
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type podMonitor struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		PodMetricsEndpoints []struct {
			Port     string `yaml:"port"`
			Path     string `yaml:"path"`
			Interval string `yaml:"interval"`
		} `yaml:"podMetricsEndpoints"`
	} `yaml:"spec"`
}

type prometheusRule struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		Groups []any `yaml:"groups"`
	} `yaml:"spec"`
}

func TestKubernetesManifests(t *testing.T) {
	var (
		dep deployment
		cm  configMap
		svc service
		pm  podMonitor
	)
	readYAML(t, "deploy/kubernetes/deployment.yaml", &dep)
	readYAML(t, "deploy/kubernetes/configmap.yaml", &cm)
	readYAML(t, "deploy/kubernetes/service.yaml", &svc)
	readYAML(t, "deploy/kubernetes/podmonitor.yaml", &pm)
	for _, k := range []struct{ got, want string }{
		{dep.APIVersion + " " + dep.Kind, "apps/v1 Deployment"},
		{cm.APIVersion + " " + cm.Kind, "v1 ConfigMap"},
		{svc.APIVersion + " " + svc.Kind, "v1 Service"},
		{pm.APIVersion + " " + pm.Kind, "monitoring.coreos.com/v1 PodMonitor"},
	} {
		if k.got != k.want {
			t.Errorf("kind %q, want %q", k.got, k.want)
		}
	}

	pod := dep.Spec.Template
	if !subset(dep.Spec.Selector.MatchLabels, pod.Metadata.Labels) || !subset(svc.Spec.Selector, pod.Metadata.Labels) ||
		!subset(pm.Spec.Selector.MatchLabels, pod.Metadata.Labels) || len(pod.Metadata.Labels) == 0 {
		t.Errorf("the deployment's, service's or pod monitor's selector does not select the pod's labels %v", pod.Metadata.Labels)
	}
	if pod.Spec.SecurityContext.SeccompProfile.Type != "RuntimeDefault" {
		t.Error("pod seccompProfile is not RuntimeDefault")
	}
	var vllm, side container
	for _, c := range pod.Spec.Containers {
		switch {
		case strings.HasPrefix(c.Image, "vllm/vllm-openai:"):
			vllm = c
		case strings.Contains(c.Image, "vllm-slo-exporter"):
			side = c
		}
	}
	if vllm.Name == "" || side.Name == "" {
		t.Fatalf("the pod must hold vLLM (vllm/vllm-openai) and the sidecar; containers: %+v", pod.Spec.Containers)
	}
	if strings.HasSuffix(side.Image, ":latest") || !strings.Contains(side.Image, ":") {
		t.Errorf("sidecar image %q is not pinned", side.Image)
	}
	if vllm.port("http") != 8000 || side.port("slo-metrics") != 10042 {
		t.Errorf("ports: vLLM http=%d, sidecar slo-metrics=%d; want 8000 and 10042", vllm.port("http"), side.port("slo-metrics"))
	}
	if vllm.Resources.Limits["nvidia.com/gpu"] != "1" {
		t.Errorf("vLLM GPU limit %q, want 1", vllm.Resources.Limits["nvidia.com/gpu"])
	}
	if addr, _ := flagValue(side.Args, "web.listen-address"); portOf(addr) != "10042" {
		t.Errorf("sidecar --web.listen-address=%q, want port 10042", addr)
	}

	// The probes go to the probe listener, which answers without
	// credentials whatever --web.config.file adds to the main port.
	if addr, _ := flagValue(side.Args, "web.probe-listen-address"); portOf(addr) != "10043" || side.port("probes") != 10043 {
		t.Errorf("sidecar --web.probe-listen-address=%q, port probes=%d; want both 10043", addr, side.port("probes"))
	}
	for _, p := range []struct {
		name  string
		probe *httpProbe
		path  string
	}{{"liveness", side.LivenessProbe, "/-/healthy"}, {"readiness", side.ReadinessProbe, "/-/ready"}} {
		if p.probe == nil || p.probe.HTTPGet.Path != p.path || side.port(p.probe.HTTPGet.Port) != 10043 {
			t.Errorf("sidecar %s probe %+v, want GET %s on port probes", p.name, p.probe, p.path)
		}
	}
	// docs/deploy.md says POST /-/reload applies a changed ConfigMap.
	if !slices.Contains(side.Args, "--web.enable-lifecycle") {
		t.Errorf("sidecar args %v lack --web.enable-lifecycle", side.Args)
	}

	sc := side.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		!slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) || sc.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("sidecar securityContext is not non-root, read-only, unprivileged: %+v", sc)
	}
	for _, r := range []string{"cpu", "memory"} {
		if side.Resources.Requests[r] == "" {
			t.Errorf("sidecar has no %s request", r)
		}
	}
	if side.Resources.Limits["memory"] == "" {
		t.Error("sidecar has no memory limit")
	}

	// The configuration: --config.file names a key of the ConfigMap mounted
	// at its directory; the file is valid; its state file is on a writable
	// volume; it scrapes vLLM over loopback on vLLM's port.
	cfgPath, ok := flagValue(side.Args, "config.file")
	if !ok {
		t.Fatal("sidecar has no --config.file flag")
	}
	vol := side.mountAt(path.Dir(cfgPath))
	text, inMap := cm.Data[path.Base(cfgPath)]
	volumeOK := false
	for _, v := range pod.Spec.Volumes {
		if v.Name == vol && v.ConfigMap != nil && v.ConfigMap.Name == cm.Metadata.Name {
			volumeOK = true
		}
	}
	if !volumeOK || !inMap {
		t.Fatalf("--config.file=%s: no ConfigMap %q with key %q mounted at %s", cfgPath, cm.Metadata.Name, path.Base(cfgPath), path.Dir(cfgPath))
	}
	checkConfig(t, "configmap.yaml", text)
	state, urls := configFields(t, "configmap.yaml", text)
	stateVol := side.mountAt(path.Dir(state))
	writable := false
	for _, v := range pod.Spec.Volumes {
		if v.Name == stateVol && (v.EmptyDir != nil || v.PersistentVolumeClaim != nil) {
			writable = true
		}
	}
	if state == "" || !writable {
		t.Errorf("state_file %q is not on an emptyDir or PVC mounted in the sidecar", state)
	}
	if !slices.Equal(urls, []string{"http://127.0.0.1:8000/metrics"}) {
		t.Errorf("the sidecar scrapes %v, want vLLM in the same pod at http://127.0.0.1:8000/metrics", urls)
	}

	svcPorts := map[int]string{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Port] = p.TargetPort
	}
	if svcPorts[8000] != "http" || svcPorts[10042] != "slo-metrics" {
		t.Errorf("service ports %v, want 8000->http and 10042->slo-metrics", svcPorts)
	}
	var monitored []string
	for _, e := range pm.Spec.PodMetricsEndpoints {
		if e.Path == "/metrics" {
			monitored = append(monitored, e.Port)
		}
	}
	slices.Sort(monitored)
	if !slices.Equal(monitored, []string{"http", "slo-metrics"}) {
		t.Errorf("the pod monitor scrapes ports %v, want vLLM (http, for the rules) and the sidecar (slo-metrics)", monitored)
	}
}

// subset reports whether every entry of sel is in labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	var k struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Resources  []string `yaml:"resources"`
	}
	readYAML(t, "deploy/kubernetes/kustomization.yaml", &k)
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Clone(k.Resources)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, want %v", got, want)
	}
}

const prometheusRulePath = "kubernetes/prometheusrule.yaml"

// prometheusRuleHeader is the PrometheusRule around the generated groups.
const prometheusRuleHeader = `# Generated from deploy/prometheus/rules.yml (itself printed by
# "vllm-slo-exporter rules --config.file=config.example.yaml"); do not edit:
# regenerate with  go test ./deploy -run TestPrometheusRule -update
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: vllm-slo
  labels:
    app.kubernetes.io/name: vllm
    app.kubernetes.io/component: slo-rules
`

// TestPrometheusRule checks that deploy/prometheus/rules.yml is what `rules`
// prints for config.example.yaml, and that the PrometheusRule's groups are
// exactly rules.yml's groups. With -update it rewrites the PrometheusRule.
func TestPrometheusRule(t *testing.T) {
	rulesFile, err := os.ReadFile(filepath.Join("prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	printed := runBinary(t, "rules", "--config.file="+filepath.Join(repoRoot, "config.example.yaml"))
	if !reflect.DeepEqual(groups(t, "rules output", printed), groups(t, "rules.yml", rulesFile)) {
		t.Error("deploy/prometheus/rules.yml differs from `vllm-slo-exporter rules --config.file=config.example.yaml`")
	}

	if *update {
		if err := os.WriteFile(prometheusRulePath, renderPrometheusRule(t, rulesFile), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var pr prometheusRule
	readYAML(t, "deploy/"+prometheusRulePath, &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("%s: kind %s %s", prometheusRulePath, pr.APIVersion, pr.Kind)
	}
	if len(pr.Spec.Groups) == 0 || !reflect.DeepEqual(pr.Spec.Groups, groups(t, "rules.yml", rulesFile)) {
		t.Errorf("%s: spec.groups differ from deploy/prometheus/rules.yml; run: go test ./deploy -run TestPrometheusRule -update", prometheusRulePath)
	}
}

// groups decodes a rules file's groups.
func groups(t *testing.T, name string, b []byte) []any {
	t.Helper()
	var f struct {
		Groups []any `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f.Groups
}

// renderPrometheusRule wraps a rules file's groups, comments and all, in a
// PrometheusRule object.
func renderPrometheusRule(t *testing.T, rulesFile []byte) []byte {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(rulesFile, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		t.Fatal("rules.yml is not one mapping")
	}
	var groupsKey, groupsValue *yaml.Node
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "groups" {
			groupsKey, groupsValue = m.Content[i], m.Content[i+1]
		}
	}
	if groupsValue == nil {
		t.Fatal("rules.yml has no groups")
	}
	spec := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "groups", HeadComment: groupsKey.HeadComment},
		groupsValue,
	}}
	var buf bytes.Buffer
	buf.WriteString(prometheusRuleHeader)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "spec"}, spec,
	}}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
