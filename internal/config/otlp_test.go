package config

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// otlpFileErrors maps every file under testdata/otlp to the exact error it
// must give; "" means the file is valid.
var otlpFileErrors = map[string]string{
	"good_full.yml":        "",
	"bad_route_target.yml": `testdata/otlp/bad_route_target.yml:8: otlp.routes[0].target: "h100" is not a configured target`,
	"bad_route_match.yml":  `testdata/otlp/bad_route_match.yml:7: otlp.routes[0].match: at least one resource attribute to match is required (e.g. service.name: vllm)`,
	"bad_listen.yml":       `testdata/otlp/bad_listen.yml:6: otlp.grpc_listen_address: "4317" is not host:port: address 4317: missing port in address`,
	"bad_no_listener.yml":  `testdata/otlp/bad_no_listener.yml:4: otlp: grpc_listen_address and http_listen_address are both empty: nothing would receive spans`,
	"bad_forward_url.yml":  `testdata/otlp/bad_forward_url.yml:7: otlp.forward.url: "127.0.0.1:4318/v1/traces" is missing an "http://" or "https://" scheme`,
	"bad_unknown_key.yml":  `testdata/otlp/bad_unknown_key.yml:6: otlp.grpc_listen_adress: unknown field "grpc_listen_adress"`,
	"bad_tls.yml":          `testdata/otlp/bad_tls.yml:6: otlp.tls_server_config: failed to read cert_file (testdata/otlp/missing.crt): open testdata/otlp/missing.crt: no such file or directory`,
	"bad_same_address.yml": `testdata/otlp/bad_same_address.yml:7: otlp.http_listen_address: "127.0.0.1:4317" is also the gRPC address`,
	"bad_body_size.yml":    `testdata/otlp/bad_body_size.yml:6: otlp.max_body_size: "lots" is not a valid size (use e.g. 512KiB, 10MiB, 1GiB)`,
	"bad_target_cap.yml":   `testdata/otlp/bad_target_cap.yml:6: otlp.max_requests_per_target: -1 must be positive`,
}

func TestLoadOTLPFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/otlp/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(otlpFileErrors) {
		t.Errorf("testdata/otlp has %d .yml files, the table %d: keep them in step", len(files), len(otlpFileErrors))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			want, ok := otlpFileErrors[name]
			if !ok {
				t.Fatalf("no expected result for %s", name)
			}
			_, err := Load(f)
			switch {
			case want == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case want != "" && err == nil:
				t.Fatalf("Load succeeded, want %q", want)
			case want != "" && err.Error() != want:
				t.Errorf("error\n got: %s\nwant: %s", err, want)
			}
		})
	}
}

func TestOTLPDefaults(t *testing.T) {
	c := mustParse(t, minimal)
	o := c.OTLP
	if o.Enabled || o.GRPCListenAddress != "127.0.0.1:4317" || o.HTTPListenAddress != "127.0.0.1:4318" {
		t.Errorf("listeners: %+v", o)
	}
	if o.MaxBodySize != 4<<20 || o.Timeout != model.Duration(10*time.Second) || o.MaxRequestsPerModel != 500000 || o.MaxRequestsPerTarget != 1000000 {
		t.Errorf("limits: %+v", o)
	}
	if o.TargetAttribute != "service.name" || o.AdapterAttribute != "gen_ai.request.model" {
		t.Errorf("attributes: %q %q", o.TargetAttribute, o.AdapterAttribute)
	}
	if o.SpanDelay != model.Duration(10*time.Second) {
		t.Errorf("SpanDelay = %v, want 10s", o.SpanDelay)
	}
	if got := o.Retention(c.Global); got != time.Hour+10*time.Second+2*time.Minute {
		t.Errorf("Retention = %v, want the longest window (1h) plus the span delay (10s) plus the lateness (2m)", got)
	}
}

func TestOTLPExplicitEmptyKept(t *testing.T) {
	c, err := Load("testdata/otlp/good_full.yml")
	if err != nil {
		t.Fatal(err)
	}
	o := c.OTLP
	if o.HTTPListenAddress != "" || o.AdapterAttribute != "" || o.TargetAttribute != "host.name" || o.SpanDelay != 0 {
		t.Errorf("explicit settings replaced by defaults: %+v", o)
	}
	if o.Forward == nil || o.Forward.Timeout != model.Duration(3*time.Second) || !o.Forward.HTTPClientConfig.FollowRedirects {
		t.Errorf("forward: %+v", o.Forward)
	}
	if len(o.Routes) != 1 || o.Routes[0].ModelName != "llama" || o.Routes[0].Match["k8s.pod.name"] != "gpu-0" {
		t.Errorf("routes: %+v", o.Routes)
	}
}
