package otlp

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
)

var loadRun = flag.Bool("otlp.load", false, "run the OTLP load harness (40 concurrent 4 MiB exports per transport; about a minute, peak RSS in the log)")

// minimalExport is an export of llm_request spans with only a name and an
// end time (now), as large as fits in size bytes: decoding it costs the
// most per byte among spans that are stored.
func minimalExport(t *testing.T, size int) []byte {
	t.Helper()
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	now := time.Now()
	for i := 0; ; i++ {
		sp := ss.AppendEmpty()
		sp.SetName(SpanName)
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Duration(i) * time.Microsecond)))
		if i%1024 == 0 && (&ptrace.ProtoMarshaler{}).TracesSize(td) > size-(64<<10) {
			break
		}
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// peakRSS reads the process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc/self/status")
	return 0
}

// resetPeakRSS makes VmHWM the current RSS (Linux's clear_refs 5).
func resetPeakRSS(t *testing.T) {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("cannot reset the peak RSS (%v): the figure includes the set-up", err)
	}
}

// TestLoadConcurrentExports is the load harness of the receiver's budget
// (outside the main suite: -otlp.load). A receiver with the daemon's
// defaults gets, per transport, waves of 40 concurrent exports of 4 MiB of
// minimal spans, from clients in this process that share one body. Every
// export must be answered 200/OK or with a retryable status (503 with
// Retry-After; UNAVAILABLE with RetryInfo), and the process's peak RSS,
// clients included, must stay under 300 MB.
//
//	go test ./internal/otlp -run TestLoadConcurrentExports -otlp.load -v
func TestLoadConcurrentExports(t *testing.T) {
	if !*loadRun {
		t.Skip("load harness: run with -otlp.load")
	}
	const clients, waves, ceiling = 40, 3, 300 << 20
	store := traces.NewStore(traces.Limits{Retain: time.Hour + 2*time.Minute, MaxRecords: 500000, MaxTargetRecords: 1000000, MaxModels: 100, MaxAdapters: 100})
	r, err := New(Options{GRPCAddress: "127.0.0.1:0", HTTPAddress: "127.0.0.1:0", Router: NewRouter(nil, "", []string{"gpu0"}, "")}, store)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-r.Ready()
	grpcAddr, httpAddr := r.Addrs()
	body := minimalExport(t, DefaultMaxBodyBytes)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(8<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	httpClient := &http.Client{Timeout: time.Minute}
	resetPeakRSS(t)
	base := peakRSS(t)
	start := time.Now()

	var mu sync.Mutex
	outcomes := map[string]int{}
	count := func(transport, outcome string) {
		mu.Lock()
		defer mu.Unlock()
		outcomes[transport+" "+outcome]++
	}
	sendHTTP := func() {
		resp, err := httpClient.Post("http://"+httpAddr+TracesPath, contentProtobuf, bytes.NewReader(body))
		count("http", httpOutcome(resp, err))
	}
	sendGRPC := func() {
		var reply []byte
		count("grpc", grpcOutcome(conn.Invoke(ctx, exportMethod, &body, &reply, grpc.ForceCodec(bytesCodec{}))))
	}
	for _, send := range []func(){sendHTTP, sendGRPC} {
		for range waves {
			var wg sync.WaitGroup
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					send()
				}()
			}
			wg.Wait()
		}
	}
	peak := peakRSS(t)
	records, bytes := store.Retained()
	t.Logf("%d waves of %d concurrent exports of %d bytes (%d spans) per transport in %v: %v", waves, clients, len(body), mustScan(t, body).spans, time.Since(start).Round(time.Millisecond), outcomes)
	t.Logf("peak RSS %.0f MB (at the start %.0f MB); store %d records, %d bytes", float64(peak)/1e6, float64(base)/1e6, records, bytes)
	for k, n := range outcomes {
		if !strings.HasSuffix(k, " ok") && !strings.Contains(k, "Retry") {
			t.Errorf("%d exports answered %q, neither accepted nor retryable", n, k)
		}
	}
	if outcomes["http ok"] == 0 || outcomes["grpc ok"] == 0 {
		t.Errorf("no export accepted on one transport: %v", outcomes)
	}
	if peak > ceiling {
		t.Errorf("peak RSS %d MB, over %d MB", peak>>20, ceiling>>20)
	}
	conn.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// httpOutcome classifies an OTLP/HTTP answer: ok, retryable, or not.
func httpOutcome(resp *http.Response, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return "ok"
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		return "503 with Retry-After"
	}
	return "not retryable: " + resp.Status
}

// grpcOutcome classifies an OTLP/gRPC answer: ok, retryable, or not.
func grpcOutcome(err error) string {
	if err == nil {
		return "ok"
	}
	st := status.Convert(err)
	for _, d := range st.Details() {
		if _, ok := d.(*errdetails.RetryInfo); ok && st.Code() == codes.Unavailable {
			return "UNAVAILABLE with RetryInfo"
		}
	}
	return "not retryable: " + st.Code().String()
}

func mustScan(t *testing.T, body []byte) exportShape {
	t.Helper()
	s, err := scanExport(body)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
