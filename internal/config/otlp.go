package config

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/units"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/exporter-toolkit/web"
)

// The defaults of the otlp section.
const (
	DefaultOTLPGRPCListenAddress = "127.0.0.1:4317"
	DefaultOTLPHTTPListenAddress = "127.0.0.1:4318"
	DefaultOTLPMaxBodySize       = 4 * units.MiB
	DefaultOTLPTimeout           = model.Duration(10 * time.Second)
	DefaultOTLPTargetAttribute   = "service.name"
	DefaultOTLPAdapterAttribute  = "gen_ai.request.model"
	DefaultOTLPMaxLateness       = model.Duration(2 * time.Minute)
	DefaultOTLPSpanDelay         = model.Duration(10 * time.Second)
	DefaultOTLPMaxRequests       = 500000
	DefaultOTLPMaxTargetRequests = 1000000
	DefaultOTLPForwardTimeout    = model.Duration(10 * time.Second)
)

// OTLP configures exact mode: an OpenTelemetry trace receiver for vLLM's
// per-request spans (vLLM started with --otlp-traces-endpoint).
type OTLP struct {
	// Enabled turns the receiver on.
	Enabled bool `yaml:"enabled"`
	// GRPCListenAddress and HTTPListenAddress are where OTLP/gRPC and
	// OTLP/HTTP are served; an explicit "" turns one off.
	GRPCListenAddress string `yaml:"grpc_listen_address"`
	HTTPListenAddress string `yaml:"http_listen_address"`
	// TLSServerConfig serves both with TLS, in exporter-toolkit's web
	// configuration format (cert_file, key_file, client_ca_file, ...).
	TLSServerConfig *web.TLSConfig `yaml:"tls_server_config,omitempty"`
	// MaxBodySize bounds one export after decompression.
	MaxBodySize units.Base2Bytes `yaml:"max_body_size"`
	// Timeout bounds reading one export.
	Timeout model.Duration `yaml:"timeout"`
	// TargetAttribute is the resource attribute whose value, when it is a
	// target's name, routes the spans to that target.
	TargetAttribute string `yaml:"target_attribute"`
	// AdapterAttribute is the span attribute holding the LoRA adapter; ""
	// does not split by adapter.
	AdapterAttribute string `yaml:"adapter_attribute"`
	// Routes map resources to targets explicitly; the first match wins,
	// before TargetAttribute. With one target and no match, spans go to it.
	Routes []OTLPRoute `yaml:"routes,omitempty"`
	// SpanDelay is how long spans may take to arrive after vLLM counted the
	// request finished (its exporter batches them, every 5s by default):
	// exact windows end at the newest scrape at least this old.
	SpanDelay model.Duration `yaml:"span_delay"`
	// MaxLateness is how long after the longest window a span may still
	// arrive and count.
	MaxLateness model.Duration `yaml:"max_lateness"`
	// MaxRequestsPerModel caps the records kept per target and model
	// (80 bytes each); windows that lose records fall back to the histograms.
	MaxRequestsPerModel int `yaml:"max_requests_per_model"`
	// MaxRequestsPerTarget caps the records kept per target across all its
	// models; beyond it the model holding the most loses its oldest.
	MaxRequestsPerTarget int `yaml:"max_requests_per_target"`
	// Forward, when set, sends every received export on to an OTLP/HTTP
	// endpoint.
	Forward *OTLPForward `yaml:"forward,omitempty"`
}

// OTLPRoute sends the spans of matching resources to a target.
type OTLPRoute struct {
	// Match lists resource attributes that must all have these values.
	Match map[string]string `yaml:"match"`
	// Target names a configured target.
	Target string `yaml:"target"`
	// ModelName is the model_name of spans without gen_ai.response.model.
	ModelName string `yaml:"model_name,omitempty"`
}

// OTLPForward is the downstream OTLP/HTTP endpoint received spans go on to.
type OTLPForward struct {
	// URL is the full endpoint, such as http://127.0.0.1:14318/v1/traces.
	URL string `yaml:"url"`
	// Timeout bounds one forwarded export.
	Timeout model.Duration `yaml:"timeout"`
	// HTTPClientConfig holds authentication, TLS and proxy settings.
	HTTPClientConfig commoncfg.HTTPClientConfig `yaml:"http_client_config"`
}

// applyOTLPDefaults fills the otlp section's unset settings.
func applyOTLPDefaults(o *OTLP, present func(path string) bool) {
	if !present("otlp.grpc_listen_address") {
		o.GRPCListenAddress = DefaultOTLPGRPCListenAddress
	}
	if !present("otlp.http_listen_address") {
		o.HTTPListenAddress = DefaultOTLPHTTPListenAddress
	}
	if o.MaxBodySize == 0 {
		o.MaxBodySize = DefaultOTLPMaxBodySize
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultOTLPTimeout
	}
	if !present("otlp.target_attribute") {
		o.TargetAttribute = DefaultOTLPTargetAttribute
	}
	if !present("otlp.adapter_attribute") {
		o.AdapterAttribute = DefaultOTLPAdapterAttribute
	}
	if !present("otlp.span_delay") {
		o.SpanDelay = DefaultOTLPSpanDelay
	}
	if !present("otlp.max_lateness") {
		o.MaxLateness = DefaultOTLPMaxLateness
	}
	if o.MaxRequestsPerModel == 0 {
		o.MaxRequestsPerModel = DefaultOTLPMaxRequests
	}
	if o.MaxRequestsPerTarget == 0 {
		o.MaxRequestsPerTarget = DefaultOTLPMaxTargetRequests
	}
	if f := o.Forward; f != nil {
		if f.Timeout == 0 {
			f.Timeout = DefaultOTLPForwardTimeout
		}
		if !present("otlp.forward.http_client_config") {
			f.HTTPClientConfig = commoncfg.DefaultHTTPClientConfig
		}
	}
}

// validateOTLP checks the otlp section against the targets.
func validateOTLP(o *OTLP, targets []Target) *fieldError {
	if o.GRPCListenAddress == "" && o.HTTPListenAddress == "" && o.Enabled {
		return errorf("otlp", "grpc_listen_address and http_listen_address are both empty: nothing would receive spans")
	}
	for _, a := range []struct{ path, addr string }{
		{"otlp.grpc_listen_address", o.GRPCListenAddress},
		{"otlp.http_listen_address", o.HTTPListenAddress},
	} {
		if err := validateListenAddress(a.addr, a.path); err != nil {
			return err
		}
	}
	if o.GRPCListenAddress != "" && o.GRPCListenAddress == o.HTTPListenAddress && !strings.HasSuffix(o.GRPCListenAddress, ":0") {
		return errorf("otlp.http_listen_address", "%q is also the gRPC address", o.HTTPListenAddress)
	}
	if o.MaxBodySize < 0 {
		return errorf("otlp.max_body_size", "%s must not be negative", o.MaxBodySize)
	}
	for _, d := range []struct {
		path  string
		value model.Duration
	}{{"otlp.timeout", o.Timeout}, {"otlp.span_delay", o.SpanDelay}, {"otlp.max_lateness", o.MaxLateness}} {
		if d.value < 0 {
			return errorf(d.path, "%s must not be negative", d.value)
		}
	}
	if o.MaxRequestsPerModel < 0 {
		return errorf("otlp.max_requests_per_model", "%d must be positive", o.MaxRequestsPerModel)
	}
	if o.MaxRequestsPerTarget < 0 {
		return errorf("otlp.max_requests_per_target", "%d must be positive", o.MaxRequestsPerTarget)
	}
	if o.TLSServerConfig != nil {
		if _, err := web.ConfigToTLSConfig(o.TLSServerConfig); err != nil {
			return errorf("otlp.tls_server_config", "%v", err)
		}
	}
	if err := validateRoutes(o.Routes, targets); err != nil {
		return err
	}
	if f := o.Forward; f != nil {
		if err := validateHTTPURL(f.URL, "otlp.forward.url"); err != nil {
			return err
		}
		return validateHTTPClient(&f.HTTPClientConfig, "otlp.forward.http_client_config")
	}
	return nil
}

func validateListenAddress(addr, path string) *fieldError {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errorf(path, "%q is not host:port: %v", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return errorf(path, "%q has no valid port", addr)
	}
	return nil
}

func validateRoutes(routes []OTLPRoute, targets []Target) *fieldError {
	for i, r := range routes {
		path := indexPath("otlp.routes", i)
		if len(r.Match) == 0 {
			return errorf(path+".match", "at least one resource attribute to match is required (e.g. service.name: vllm)")
		}
		if !slices.ContainsFunc(targets, func(t Target) bool { return t.Name == r.Target }) {
			return errorf(path+".target", "%q is not a configured target", r.Target)
		}
	}
	return nil
}

// Retention is how long the trace store keeps a record: the longest window,
// plus the span delay (exact windows end that much earlier), plus the
// lateness allowed.
func (o OTLP) Retention(g Global) time.Duration {
	longest := time.Duration(0)
	for _, w := range g.Windows {
		longest = max(longest, time.Duration(w))
	}
	return longest + time.Duration(o.SpanDelay) + time.Duration(o.MaxLateness)
}
