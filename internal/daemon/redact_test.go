package daemon

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestQuerySecretHidden: a secret in a target URL's query string
// (?api_key=...) is shown nowhere the daemon shows the URL: not in /config,
// not on the console (which shows the scrape error), not in the logs. The
// parameter's name stays, so the operator still sees which URL it is.
func TestQuerySecretHidden(t *testing.T) {
	const secret = "S3CRET-QUERY-KEY"
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		r := startRig(t, n, testConfig([]string{"a http://down:80/metrics?api_key=" + secret + "&x=1"}, ""))
		advance(time.Minute)
		views := map[string]string{"log": r.log.String()}
		for _, path := range []string{"/config", "/"} {
			code, body := r.do(http.MethodGet, path)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", path, code)
			}
			views[path] = body
		}
		for where, text := range views {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows the query secret:\n%s", where, text)
			}
			if !strings.Contains(text, "api_key=xxxxx") {
				t.Errorf("%s does not show the URL with its query value hidden (api_key=xxxxx):\n%s", where, text)
			}
		}
	})
}

// TestOAuth2SecretsHidden: an OAuth2 token_url's query values and the
// endpoint_params values are shown nowhere: not in /config, not on the
// console (the scrape error names the token URL), not in the logs.
func TestOAuth2SecretsHidden(t *testing.T) {
	const tokenSecret, paramSecret = "S3CRET-TOKEN-URL-KEY", "S3CRET-ENDPOINT-PARAM"
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		oauth := "http_client_config: {oauth2: {client_id: x, client_secret: y, token_url: \"http://auth:80/token?api_key=" + tokenSecret +
			"\", endpoint_params: {assertion: " + paramSecret + "}}}"
		r := startRig(t, n, testConfig([]string{"a http://down:80/metrics " + oauth}, ""))
		advance(time.Minute)
		views := map[string]string{"log": r.log.String()}
		for _, path := range []string{"/config", "/"} {
			code, body := r.do(http.MethodGet, path)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", path, code)
			}
			views[path] = body
		}
		for where, text := range views {
			for _, secret := range []string{tokenSecret, paramSecret} {
				if strings.Contains(text, secret) {
					t.Errorf("%s shows %s:\n%s", where, secret, text)
				}
			}
			if !strings.Contains(text, "api_key=xxxxx") {
				t.Errorf("%s does not show the token URL with its query value hidden (api_key=xxxxx):\n%s", where, text)
			}
		}
	})
}
