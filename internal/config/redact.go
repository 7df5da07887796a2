package config

import (
	"fmt"
	"maps"
	"net/url"

	commoncfg "github.com/prometheus/common/config"
	"gopkg.in/yaml.v3"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// secretPlaceholder is what Redacted shows instead of a secret that is not a
// prometheus/common Secret (which marshals as "<secret>" itself).
const secretPlaceholder = "<secret>"

// Redacted returns the configuration as YAML with every secret replaced, for
// logs and the status page: passwords, bearer tokens, OAuth2 client secrets
// and keys (prometheus/common's Secret marshalling, "<secret>"), the
// password of every URL (user:pass@) and the value of every URL query
// parameter (scrape.DisplayURL: "xxxxx") in target, Alertmanager, OTLP
// forward, proxy and OAuth2 token URLs, and every OAuth2 endpoint_params
// value ("<secret>"). It must not be used while config.MarshalSecretValue is
// set. The running configuration is not changed.
func (c *Config) Redacted() ([]byte, error) {
	cp := *c
	cp.Targets = make([]Target, len(c.Targets))
	for i, t := range c.Targets {
		t.URL = RedactURL(t.URL)
		t.HTTPClientConfig = redactHTTPClient(t.HTTPClientConfig)
		cp.Targets[i] = t
	}
	cp.Alerting.Alertmanagers = make([]Alertmanager, len(c.Alerting.Alertmanagers))
	for i, am := range c.Alerting.Alertmanagers {
		am.URL = RedactURL(am.URL)
		am.HTTPClientConfig = redactHTTPClient(am.HTTPClientConfig)
		cp.Alerting.Alertmanagers[i] = am
	}
	if f := c.OTLP.Forward; f != nil {
		fw := *f
		fw.URL = RedactURL(fw.URL)
		fw.HTTPClientConfig = redactHTTPClient(fw.HTTPClientConfig)
		cp.OTLP.Forward = &fw
	}
	out, err := yaml.Marshal(&cp)
	if err != nil {
		return nil, fmt.Errorf("marshal config: %w", err)
	}
	return out, nil
}

// redactHTTPClient returns a copy of h whose URLs and OAuth2 endpoint
// parameters are redacted (the Secret fields redact themselves when
// marshalled). h is not changed.
func redactHTTPClient(h commoncfg.HTTPClientConfig) commoncfg.HTTPClientConfig {
	h.ProxyConfig = redactProxy(h.ProxyConfig)
	if h.OAuth2 != nil {
		o := *h.OAuth2
		o.TokenURL = RedactURL(o.TokenURL)
		o.ProxyConfig = redactProxy(o.ProxyConfig)
		if o.EndpointParams != nil {
			o.EndpointParams = maps.Clone(o.EndpointParams)
			for k := range o.EndpointParams {
				o.EndpointParams[k] = secretPlaceholder
			}
		}
		h.OAuth2 = &o
	}
	return h
}

// redactProxy returns p with the query values of its proxy URL hidden too
// (prometheus/common hides only the password).
func redactProxy(p commoncfg.ProxyConfig) commoncfg.ProxyConfig {
	if u := p.ProxyURL.URL; u != nil && u.RawQuery != "" {
		if shown, err := url.Parse(scrape.DisplayURL(u)); err == nil {
			p.ProxyURL = commoncfg.URL{URL: shown}
		}
	}
	return p
}

// RedactURL hides a password written into a URL (http://user:pass@host)
// and every query value (?api_key=...), as scrape.DisplayURL does, so that
// views and messages never show them. Text that is not a URL is returned
// unchanged (validation refuses it before anything shows it).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.User == nil && u.RawQuery == "") {
		return raw
	}
	return scrape.DisplayURL(u)
}
