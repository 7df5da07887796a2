package notify

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/testlog"
)

// refusingClient is an HTTP client built as the daemon builds an
// Alertmanager's (prometheus/common), whose every connection is refused
// without a socket, so that the test runs in a synctest bubble.
func refusingClient(t *testing.T, cfg commoncfg.HTTPClientConfig) *http.Client {
	t.Helper()
	refuse := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("connect: connection refused")
	}
	c, err := commoncfg.NewClientFromConfig(cfg, "alertmanager-0", commoncfg.WithDialContextFunc(refuse))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDeliveryErrorsRedactSecrets: an Alertmanager that cannot be reached
// is logged ("alerts not delivered") without the secrets of the URLs the
// error quotes: its own URL's query values (net/http's error repeats the
// request URL, query included, whatever Display hides), its password when
// no Display is set, and an OAuth2 token_url's query values (the client's
// error names the token endpoint). Before, the err of the log line showed
// the query values and the token URL in clear.
func TestDeliveryErrorsRedactSecrets(t *testing.T) {
	oauth := commoncfg.HTTPClientConfig{OAuth2: &commoncfg.OAuth2{
		ClientID: "id", ClientSecret: "client-secret-value",
		TokenURL: "http://auth.example/token?api_key=token-secret-value",
	}}
	cases := []struct {
		name         string
		url, display string
		client       commoncfg.HTTPClientConfig
		secrets      []string
	}{
		{"query secret", "http://am.example:9093/?api_key=query-secret-value", "http://am.example:9093/?api_key=xxxxx", commoncfg.DefaultHTTPClientConfig, []string{"query-secret-value"}},
		{"password, no display", "http://user:url-password-value@am.example:9093", "", commoncfg.DefaultHTTPClientConfig, []string{"url-password-value"}},
		{"oauth2 token_url", "http://am.example:9093", "http://am.example:9093", oauth, []string{"token-secret-value", "client-secret-value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logs := &testlog.Buffer{}
				am := Alertmanager{URL: c.url, Display: c.display, Client: refusingClient(t, c.client), Timeout: time.Second}
				n := New(Config{Alertmanagers: []Alertmanager{am}}, slog.New(slog.NewTextHandler(logs, nil)), NewMetrics(nil))
				running(t, n)
				n.Notify(start, []pipeline.Alert{{Labels: map[string]string{"alertname": "x"}, State: pipeline.StateFiring, ActiveAt: start}})
				<-time.After(time.Minute) // virtual time: past the three attempts' backoff (1 s + 2 s)
				synctest.Wait()
				logged := logs.String()
				if !strings.Contains(logged, "alerts not delivered") || !strings.Contains(logged, "am.example") {
					t.Fatalf("log %q: no delivery failure naming the Alertmanager", logged)
				}
				for _, s := range c.secrets {
					if strings.Contains(logged, s) {
						t.Errorf("the log shows the secret %q: %s", s, logged)
					}
				}
			})
		})
	}
}
