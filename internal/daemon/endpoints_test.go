package daemon

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/testlog"
)

// TestLifecycleOffByDefault: a daemon built without EnableLifecycle answers
// POST /-/reload with 403 and reloads nothing; with it, a cross-site POST
// is refused all the same.
func TestLifecycleOffByDefault(t *testing.T) {
	cfg := testConfig([]string{"a http://a:80/metrics"}, "")
	d := newTestDaemon(t, cfg, &testlog.Buffer{})
	rec := httptest.NewRecorder()
	d.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/-/reload", nil))
	if rec.Code != http.StatusForbidden {
		t.Errorf("POST /-/reload with the lifecycle API off: %d, want 403", rec.Code)
	}
	d.opts.EnableLifecycle = true
	req := httptest.NewRequest(http.MethodPost, "http://exporter:10042/-/reload", nil)
	req.Header.Set("Origin", "http://evil.example")
	rec = httptest.NewRecorder()
	d.handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("cross-site POST /-/reload with the lifecycle API on: %d, want 403", rec.Code)
	}
}
