package config

import (
	"strings"
	"testing"
)

// TestRedactedHidesOAuth2AndProxySecrets: the secrets prometheus/common's
// Secret type does not cover are hidden too: the query values of an OAuth2
// token_url and of a proxy URL, and every OAuth2 endpoint_params value, in
// targets and Alertmanagers; the running configuration keeps them.
func TestRedactedHidesOAuth2AndProxySecrets(t *testing.T) {
	const yml = `
targets:
  - name: a
    url: http://127.0.0.1:8000/metrics
    http_client_config:
      proxy_url: http://proxy.example:3128/?proxy_key=PROXY-QUERY-SECRET
      oauth2:
        client_id: exporter
        client_secret: CLIENT-SECRET
        token_url: https://auth.example/token?api_key=TOKEN-URL-SECRET&tenant=t1
        endpoint_params: {audience: vllm, assertion: ENDPOINT-PARAM-SECRET}
slos:
  - name: s
    objectives: {ttft: 500ms}
    goal: 0.99
    period: 1d
alerting:
  alertmanagers:
    - url: http://127.0.0.1:9093
      http_client_config:
        oauth2:
          client_id: am
          client_secret: AM-CLIENT-SECRET
          token_url: https://auth.example/token?key=AM-TOKEN-URL-SECRET
          endpoint_params: {resource: AM-ENDPOINT-PARAM-SECRET}
`
	c, err := Parse([]byte(yml), "oauth2.yml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"PROXY-QUERY-SECRET", "CLIENT-SECRET", "TOKEN-URL-SECRET", "ENDPOINT-PARAM-SECRET", "AM-TOKEN-URL-SECRET", "AM-ENDPOINT-PARAM-SECRET", "AM-CLIENT-SECRET"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("Redacted output shows %q:\n%s", secret, out)
		}
	}
	for _, shown := range []string{"api_key=xxxxx", "tenant=xxxxx", "proxy_key=xxxxx", "audience: <secret>", "https://auth.example/token?"} {
		if !strings.Contains(string(out), shown) {
			t.Errorf("Redacted output lacks %q (names stay, values go):\n%s", shown, out)
		}
	}
	o := c.Targets[0].HTTPClientConfig.OAuth2
	if !strings.Contains(o.TokenURL, "TOKEN-URL-SECRET") || o.EndpointParams["assertion"] != "ENDPOINT-PARAM-SECRET" ||
		!strings.Contains(c.Targets[0].HTTPClientConfig.ProxyURL.String(), "PROXY-QUERY-SECRET") {
		t.Errorf("Redacted changed the running configuration: %+v", o)
	}
	if _, err := Parse(out, "redacted.yml"); err != nil {
		t.Errorf("redacted output does not load: %v\n%s", err, out)
	}
}
