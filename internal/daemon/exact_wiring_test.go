package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

func TestExactFromConfig(t *testing.T) {
	off, err := config.Parse([]byte("targets:\n  - name: gpu0\n    url: http://127.0.0.1:8000/metrics\n"), "off.yml")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := exactFromConfig(off, nil, newSteadyClock(time.Now, nil)); e != nil || err != nil {
		t.Fatalf("disabled otlp: %v, %v", e, err)
	}
	cfg, err := config.Parse([]byte(`targets:
  - name: gpu0
    url: http://127.0.0.1:8000/metrics
otlp:
  enabled: true
  grpc_listen_address: 127.0.0.1:0
  http_listen_address: 127.0.0.1:0
  forward: {url: "http://127.0.0.1:1/v1/traces"}
`), "on.yml")
	if err != nil {
		t.Fatal(err)
	}
	e, err := exactFromConfig(cfg, slog.New(slog.DiscardHandler), newSteadyClock(time.Now, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	select {
	case <-e.Receiver.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	if g, h := e.Receiver.Addrs(); g == "" || h == "" {
		t.Errorf("addresses %q %q", g, h)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
}

func TestCalibrationLogOncePerChange(t *testing.T) {
	var buf bytes.Buffer
	log := newCalibrationLog(slog.New(slog.NewTextHandler(&buf, nil)))
	report := func(failures ...string) *pipeline.Report {
		res := traces.Result{Nominal: 5 * time.Minute, Covered: len(failures) == 0, Inconsistent: len(failures) > 0, Calibration: traces.Calibration{Checked: 3, Failures: failures}}
		return &pipeline.Report{Targets: []pipeline.TargetReport{{Name: "gpu0", Models: []pipeline.ModelReport{{Name: "m", Traces: []traces.Result{res}}}}}}
	}
	log.Observe(report("e2e quantile 0.99: exact 2 outside the histogram bounds [1, 1.5]"))
	log.Observe(report("e2e quantile 0.99: exact 2 outside the histogram bounds [1, 1.5]"))
	if n := strings.Count(buf.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d error lines for one failing window, want 1:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "window=5m") || !strings.Contains(buf.String(), "outside the histogram bounds") {
		t.Errorf("log does not say where and what:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "spans are inconsistent with the histograms") || strings.Contains(buf.String(), "bug") {
		t.Errorf("log does not say that the spans contradict the histograms (or blames the exporter's math):\n%s", buf.String())
	}
	log.Observe(report())
	if !strings.Contains(buf.String(), "consistent with the histograms again") {
		t.Errorf("recovery not logged:\n%s", buf.String())
	}
}

// TestReconfigureFollowsTargets: after a reload that renames the only
// target, spans go to the new one and the old one's records are dropped.
func TestReconfigureFollowsTargets(t *testing.T) {
	parse := func(name string) *config.Config {
		c, err := config.Parse([]byte("targets:\n  - name: "+name+"\n    url: http://127.0.0.1:8000/metrics\n"+
			"otlp:\n  enabled: true\n  grpc_listen_address: 127.0.0.1:0\n  http_listen_address: 127.0.0.1:0\n"), "c.yml")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	e, err := exactFromConfig(parse("old"), nil, newSteadyClock(time.Now, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-e.Receiver.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	_, httpAddr := e.Receiver.Addrs()
	end := time.Now()
	postSpan(t, httpAddr, end)
	if got := len(e.Store.Select("old", "m", true, end.Add(-time.Minute), end.Add(time.Minute)).All); got != 1 {
		t.Fatalf("old target holds %d records", got)
	}
	e.Reconfigure(parse("new"))
	if n, _ := e.Store.Retained(); n != 0 {
		t.Errorf("%d records of the removed target kept", n)
	}
	postSpan(t, httpAddr, end)
	if got := len(e.Store.Select("new", "m", true, end.Add(-time.Minute), end.Add(time.Minute)).All); got != 1 {
		t.Errorf("new target holds %d records after the reload, want 1", got)
	}
}

// postSpan exports one finished request's span over OTLP/HTTP.
func postSpan(t *testing.T, httpAddr string, end time.Time) {
	t.Helper()
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("llm_request")
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	sp.Attributes().PutDouble("gen_ai.latency.e2e", 1)
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+httpAddr+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %s", resp.Status)
	}
}
