package reliability

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// secrets are the secret values of testdata/secrets.yml.
var secrets = []string{"S3CRET-BEARER-TOKEN", "S3CRET-BASIC-PASSWORD", "S3CRET-URL-PASSWORD", "S3CRET-AM-PASSWORD"}

func leaked(text string) []string {
	var out []string
	for _, s := range secrets {
		if strings.Contains(text, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestConfigViewRedactsSecrets: the /config view (config.Redacted, served by
// the exporter's handler) shows no bearer token or password of a target or an
// Alertmanager, including one written into a target URL.
func TestConfigViewRedactsSecrets(t *testing.T) {
	cfg, err := config.Load("testdata/secrets.yml")
	if err != nil {
		t.Fatal(err)
	}
	h := exporter.NewHandler(exporter.Endpoints{
		Report:     func() *pipeline.Report { return nil },
		ConfigYAML: cfg.Redacted,
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/config", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /config: %d", rec.Code)
	}
	body := rec.Body.String()
	if !strings.Contains(body, "scraper") {
		t.Fatalf("the config view lacks the non-secret username; body:\n%s", body)
	}
	var urlOnly []string
	for _, s := range leaked(body) {
		if s != "S3CRET-URL-PASSWORD" {
			t.Errorf("/config shows the secret %q", s)
		}
		urlOnly = append(urlOnly, s)
	}
	if len(urlOnly) > 0 && !t.Failed() {
		t.Errorf("config.Redacted shows a password written into a target URL (http://user:pass@host): render it with url.URL.Redacted()")
	}
}

// TestScrapeErrorsRedactSecrets: a failed scrape's error — what the daemon
// logs and the landing page shows — names the target and URL but never a
// password, neither of the URL's userinfo nor of the HTTP client settings.
func TestScrapeErrorsRedactSecrets(t *testing.T) {
	cfg, err := config.Load("testdata/secrets.yml")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	refused := refusedURL(t)
	var texts []string
	for _, tgt := range cfg.Targets {
		for _, base := range []string{srv.URL, strings.TrimSuffix(refused, "/metrics")} {
			// Point the target at our server, keeping its userinfo.
			url := strings.Replace(tgt.URL, tgt.URL[strings.LastIndex(tgt.URL, "@")+1:], strings.TrimPrefix(base, "http://")+"/metrics", 1)
			if !strings.Contains(tgt.URL, "@") {
				url = base + "/metrics"
			}
			f, err := scrape.NewFetcher(tgt.Name, url, tgt.HTTPClientConfig, rigTimeout, rigBodyLimit)
			if err != nil {
				t.Fatalf("target %s: %v", tgt.Name, err)
			}
			_, _, err = f.Scrape(context.Background(), scrape.Profile{}, rigStart)
			if err == nil {
				t.Fatalf("target %s at %s: scrape succeeded", tgt.Name, url)
			}
			texts = append(texts, err.Error())
		}
	}
	all := strings.Join(texts, "\n")
	for _, s := range leaked(all) {
		if s != "S3CRET-URL-PASSWORD" {
			t.Errorf("a scrape error shows the secret %q:\n%s", s, all)
		}
	}
	if len(leaked(all)) > 0 && !t.Failed() {
		t.Errorf("scrape.Fetcher puts the raw target URL with its user:password into every error (and so into logs and the landing page): store u.Redacted() for messages; e.g. %q", firstWith(texts, "S3CRET"))
	}
}

func firstWith(texts []string, sub string) string {
	for _, s := range texts {
		if strings.Contains(s, sub) {
			return s
		}
	}
	return ""
}

// TestBearerTokenSent is the control for the redaction tests: the secret is
// really used on the wire, so its absence from the texts above means
// redaction, not a test that never configured it.
func TestBearerTokenSent(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		http.NotFound(w, r)
	}))
	defer srv.Close()
	hc := commoncfg.DefaultHTTPClientConfig
	hc.Authorization = &commoncfg.Authorization{Type: "Bearer", Credentials: "S3CRET-BEARER-TOKEN"}
	f, err := scrape.NewFetcher("bearer", srv.URL+"/metrics", hc, rigTimeout, rigBodyLimit)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Fetch(context.Background())
	if err == nil {
		t.Fatal("fetch of a 404 succeeded")
	}
	if h := <-got; h != "Bearer S3CRET-BEARER-TOKEN" {
		t.Fatalf("Authorization header %q", h)
	}
	if s := leaked(err.Error()); len(s) > 0 {
		t.Fatalf("error shows %v: %v", s, err)
	}
}

// hostileModel is a model_name built to break HTML and the exposition
// format: markup, quotes, a backslash and a newline.
const hostileModel = "<script>alert(\"x\")</script>\\\n'&"

// TestLabelValuesEscaped: a target serving a hostile model_name has it shown
// escaped on the landing page (no live markup) and round-tripped exactly
// through our /metrics.
func TestLabelValuesEscaped(t *testing.T) {
	r := newRig(t)
	escaped := `model_name="<script>alert(\"x\")</script>\\\n'&"`
	serve := func(w http.ResponseWriter, _ *http.Request) {
		body, ct := r.victimBody()
		w.Header().Set("Content-Type", ct)
		w.Write([]byte(strings.ReplaceAll(string(body), fmt.Sprintf("model_name=%q", victimModel), escaped)))
	}
	for range 3 {
		if err := r.step(serve); err != nil {
			t.Fatalf("scrape: %v", err)
		}
		r.check()
	}
	all := r.main.series(t)
	key := fmt.Sprintf("%swindow_requests{metric=\"e2e\",model_name=%q,target=%q,window=\"1m\"}", metricsPrefix, hostileModel, hostileName)
	if v, ok := all[key]; !ok || v <= 0 {
		t.Fatalf("%s = %v (present %v): the hostile model name did not round-trip", key, v, ok)
	}
	rec := httptest.NewRecorder()
	r.main.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	page, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK {
		t.Fatalf("landing page: %d", rec.Code)
	}
	if strings.Contains(string(page), "<script>") {
		t.Fatalf("the landing page contains live markup from a model name")
	}
	if !strings.HasSuffix(strings.TrimSpace(string(page)), "</html>") {
		tail := string(page[max(0, len(page)-200):])
		t.Errorf("the landing page is cut short by a template error and still answers 200 (exporter/landing.go executes into the ResponseWriter; render into a buffer first): ...%q", tail)
	}
	if !strings.Contains(string(page), "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Fatalf("the landing page does not show the escaped model name")
	}
}
