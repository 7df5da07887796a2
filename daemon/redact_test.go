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
