package daemon

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// TestExactModeIsAnActor: with the otlp section on, the receiver runs in the
// daemon's group on real loopback ports, its spans reach the store the
// pipeline reads (also after a reload), its own series are on the daemon's
// registry, and it stops with the rest. (The receiver's real sockets keep it
// out of the synctest bubbles of the other tests; the end-to-end numbers are
// tested in package otlp.)
func TestExactModeIsAnActor(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.yaml")
	cfg := testConfig([]string{"a http://127.0.0.1:1/metrics"}, `otlp:
  enabled: true
  grpc_listen_address: 127.0.0.1:0
  http_listen_address: 127.0.0.1:0
`)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{ConfigFile: file, Serve: func(srv *http.Server) error { return srv.Serve(ln) }, Signals: make(chan os.Signal)})
	if err != nil {
		t.Fatal(err)
	}
	if d.exact == nil || d.pipelineSpec(d.config.get()).Traces != d.exact.Store {
		t.Fatal("exact mode not wired into the pipeline spec")
	}
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- d.Run(ctx) }()
	select {
	case <-d.exact.Receiver.Ready():
	case err := <-result:
		t.Fatalf("Run: %v", err)
	}
	_, httpAddr := d.exact.Receiver.Addrs()

	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("llm_request")
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(time.Now()))
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
	if n, _ := d.exact.Store.Retained(); n != 1 {
		t.Errorf("store holds %d records, want 1", n)
	}
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	if n, _ := d.exact.Store.Retained(); n != 1 {
		t.Errorf("after a reload the store holds %d records, want 1", n)
	}
	if got, err := testutil.GatherAndCount(d.self, "vllm_slo_exporter_otlp_spans_total"); err != nil || got != 1 {
		t.Errorf("receiver series on the daemon's registry: %d (%v)", got, err)
	}
	cancel()
	if err := <-result; err != nil {
		t.Errorf("Run after its context ended = %v, want nil", err)
	}
	if _, err := net.Dial("tcp", httpAddr); err == nil {
		t.Error("the receiver still listens after Run returned")
	}
}
