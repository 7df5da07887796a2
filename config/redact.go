package config

import (
	"fmt"
	"net/url"

	"gopkg.in/yaml.v3"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// Redacted returns the configuration as YAML with every secret (passwords,
// bearer tokens, OAuth2 client secrets) replaced by "<secret>", for logs and
// the status page. It relies on prometheus/common's Secret marshalling, so it
// must not be used while config.MarshalSecretValue is set.
func (c *Config) Redacted() ([]byte, error) {
	cp := *c
	cp.Targets = make([]Target, len(c.Targets))
	for i, t := range c.Targets {
		t.URL = RedactURL(t.URL)
		cp.Targets[i] = t
	}
	cp.Alerting.Alertmanagers = make([]Alertmanager, len(c.Alerting.Alertmanagers))
	for i, am := range c.Alerting.Alertmanagers {
		am.URL = RedactURL(am.URL)
		cp.Alerting.Alertmanagers[i] = am
	}
	out, err := yaml.Marshal(&cp)
	if err != nil {
		return nil, fmt.Errorf("marshal config: %w", err)
	}
	return out, nil
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
