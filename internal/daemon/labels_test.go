package daemon

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// TestHugeLabelValuesRefused: a target whose body (under the size limit)
// carries three 1 MiB model_name values beside a real model: the daemon
// refuses those models at every scrape, counts them by reason, logs them
// once, and /metrics (like the history) holds no copy of the names.
func TestHugeLabelValuesRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		cfg, err := sim.Preset("steady", 7, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var extra strings.Builder
		for i := range 3 {
			name := strings.Repeat(string(rune('a'+i)), 1<<20)
			fmt.Fprintf(&extra, "vllm:num_requests_running{engine=\"0\",model_name=%q} 1\n", name)
			fmt.Fprintf(&extra, "vllm:num_requests_waiting{engine=\"0\",model_name=%q} 0\n", name)
		}
		sh := s.Handler(time.Now)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Accept-Encoding")
			rec := httptest.NewRecorder()
			sh.ServeHTTP(rec, r)
			w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
			w.Write(rec.Body.Bytes())
			w.Write([]byte(extra.String()))
		})}
		go srv.Serve(n.listen("hostile:80"))
		defer srv.Close()

		r := startRig(t, n, testConfig([]string{"h http://hostile:80/metrics"}, ""))
		advance(4 * 15 * time.Second)
		code, body := r.do(http.MethodGet, "/metrics")
		if code != http.StatusOK {
			t.Fatalf("GET /metrics: %d", code)
		}
		if len(body) > 1<<20 {
			t.Errorf("/metrics is %d bytes: it repeats the refused names", len(body))
		}
		if !strings.Contains(body, `vllm_slo_target_family_rejections_total{metric="running",reason="`+scrape.ReasonLabelTooLong+`",target="h"}`) {
			t.Errorf("/metrics does not count the refused models by reason")
		}
		if !strings.Contains(body, `model_name="`) {
			t.Errorf("/metrics lost the real model")
		}
		if got := countLines(r.log.String(), "models left out of the scrape"); got != 1 {
			t.Errorf("%d log lines about the refused models over 4 scrapes, want 1", got)
		}
		if len(r.log.String()) > 64<<10 {
			t.Errorf("the log holds %d bytes: it repeats the refused names", len(r.log.String()))
		}
		if tr := r.targetReport("h"); tr.History.Bytes > 1<<20 {
			t.Errorf("history holds %d bytes", tr.History.Bytes)
		}
	})
}
