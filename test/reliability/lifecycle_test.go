package reliability

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/notify"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// generous bounds "promptly" in the tests below: far below the timeouts that
// would otherwise apply (a minute), far above any scheduling delay.
const generous = 10 * time.Second

// TestShutdownMidScrape: SIGTERM cancels the loops' context while a scrape
// hangs on a target that never answers (scrape timeout one minute). The loop
// returns promptly, and the in-flight result it hands over carries
// context.Canceled, which the daemon's sink discards (daemon/loops.go
// start: `if ctx.Err() != nil { return }`) because FailureReason alone
// would count it as a connection failure of the target.
func TestShutdownMidScrape(t *testing.T) {
	h := newHostile(t)
	arrived := make(chan struct{}, 1)
	h.set(func(_ http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		h.hang(r)
	})
	f := newFetcherTimeout(t, hostileName, h.srv.URL+"/metrics", commoncfg.DefaultHTTPClientConfig, time.Minute)
	p, err := scrape.LookupProfile("vllm")
	if err != nil {
		t.Fatal(err)
	}
	// A loop waits its offset, a share of the interval, before its first
	// scrape: a millisecond's interval makes that wait negligible, and the
	// hanging scrape keeps the ticker from starting another one.
	loop := &scrape.Loop{Target: hostileName, Fetcher: f, Profile: p, Interval: time.Millisecond, Timeout: time.Minute, Now: time.Now}
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan scrape.Result, 4)
	done := make(chan struct{})
	go func() {
		loop.Run(ctx, func(r scrape.Result) { results <- r })
		close(done)
	}()
	select {
	case <-arrived:
	case <-time.After(generous):
		t.Fatal("the scrape never reached the target")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(generous):
		t.Fatal("the loop did not return after its context was cancelled mid-scrape")
	}
	res := <-results
	if !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("in-flight result error %v, want context.Canceled", res.Err)
	}
	if got := scrape.FailureReason(res.Err); got != scrape.ReasonConnection {
		t.Logf("FailureReason of a cancelled scrape is %q", got)
	}
	if len(results) != 0 {
		t.Fatalf("the loop scraped again after cancellation")
	}
}

// TestAlertmanagerDownOrSlow: one Alertmanager hangs, one refuses
// connections, one works. Notify never blocks the evaluation, the working
// Alertmanager still receives the alerts, and stopping the notifier returns
// promptly although a post is hanging.
func TestAlertmanagerDownOrSlow(t *testing.T) {
	slow := newHostile(t)
	slow.set(func(_ http.ResponseWriter, r *http.Request) { slow.hang(r) })
	var received atomic.Int64
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v2/alerts" {
			received.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer good.Close()
	refused := strings.TrimSuffix(refusedURL(t), "/metrics")
	n := notify.New(notify.Config{
		Alertmanagers: []notify.Alertmanager{
			{URL: slow.srv.URL, Timeout: time.Minute},
			{URL: refused, Timeout: time.Minute},
			{URL: good.URL, Timeout: time.Minute},
		},
		ResendDelay: time.Minute,
	}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		n.Run(ctx)
		close(stopped)
	}()
	notified := make(chan struct{})
	go func() {
		now := rigStart
		for i := range 200 {
			now = now.Add(time.Minute)
			n.Notify(now, []pipeline.Alert{{
				Labels: map[string]string{"alertname": "SLOBurnRateHigh", "target": hostileName, "n": string(rune('a' + i%26))},
				State:  pipeline.StateFiring, ActiveAt: rigStart, FiredAt: rigStart,
			}})
		}
		close(notified)
	}()
	select {
	case <-notified:
	case <-time.After(generous):
		t.Fatal("Notify blocked behind a slow or dead Alertmanager")
	}
	deadline := time.After(generous)
	for received.Load() == 0 {
		select {
		case <-deadline:
			t.Fatal("the working Alertmanager received nothing while another hung")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(generous):
		t.Fatal("the notifier did not stop while a post hung")
	}
}

// TestConcurrentClients: 200 clients at once GET /metrics (twice each; every
// tenth the landing page) while
// both targets are scraped, ingested and evaluated (run with -race). Every
// answer is a complete exposition or page (200) or the in-flight limit's
// explicit refusal (503: more than 50 on /metrics, more than 8 on the
// console, whose 20 clients can outrun it); the healthy and hostile numbers
// stay right (rig.check after every step).
func TestConcurrentClients(t *testing.T) {
	r := newRig(t)
	// 200 busy clients on 2 cores under -race starve the scrapes of CPU: give
	// them time, the case is about concurrency, not latency.
	r.healthy = newFetcherTimeout(t, healthyName, r.healthyURL, commoncfg.DefaultHTTPClientConfig, time.Minute)
	r.badF = newFetcherTimeout(t, hostileName, r.badURL, commoncfg.DefaultHTTPClientConfig, time.Minute)
	if err := r.step(r.good); err != nil {
		t.Fatal(err)
	}
	// The clients get their own handler over the same report, so that the
	// in-flight limit they hit does not refuse rig.check's own requests.
	srv := httptest.NewServer(exporter.NewHandler(exporter.Endpoints{Report: r.main.report.Load}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}}
	var ok, refused atomic.Int64
	errs := make(chan error, 200)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/metrics"
			if i%10 == 0 {
				path = "/"
			}
			<-start // all 200 at once
			for range 2 {
				resp, err := client.Get(srv.URL + path)
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					errs <- err
					return
				case resp.StatusCode == http.StatusServiceUnavailable && refusedByLimit(path, string(body)):
					refused.Add(1)
				case resp.StatusCode != http.StatusOK:
					errs <- errors.New(path + ": " + resp.Status)
					return
				case path == "/metrics":
					if _, err := parseExposition(strings.NewReader(string(body))); err != nil {
						errs <- err
						return
					}
					ok.Add(1)
				default:
					ok.Add(1)
				}
			}
		}()
	}
	close(start)
	for range 4 {
		if err := r.step(r.good); err != nil {
			t.Fatal(err)
		}
		r.check()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("client: %v", err)
	}
	if ok.Load() == 0 {
		t.Fatal("no client got an answer")
	}
	t.Logf("%d answers, %d refused by the in-flight limit", ok.Load(), refused.Load())
}

// refusedByLimit reports whether a 503 body is the in-flight limit's refusal
// for path: promhttp's for /metrics (MaxMetricsInFlight), limitInFlight's for
// the console (MaxPagesInFlight). Any other 503 is an error.
func refusedByLimit(path, body string) bool {
	if path == "/metrics" {
		return strings.Contains(body, "Limit of concurrent requests reached")
	}
	return strings.Contains(body, "Too many requests in flight")
}

// TestInvalidReloadKeepsRunning: a reload with an invalid file is refused by
// config.Load with the file, line and field, so the daemon never calls
// Reconfigure (daemon/reload.go; the binary-level reload is proven in
// package e2e). A valid reload with unchanged targets keeps every history:
// the published numbers do not move.
func TestInvalidReloadKeepsRunning(t *testing.T) {
	_, err := config.Load("testdata/invalid_reload.yml")
	if err == nil {
		t.Fatal("an invalid configuration loaded")
	}
	if want := "testdata/invalid_reload.yml:7: slos[0].goal"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
	r := newRig(t)
	for range 4 {
		if err := r.step(r.good); err != nil {
			t.Fatal(err)
		}
	}
	before := r.main.series(t)
	spec := testSpec(targetSpec(t, healthyName, r.healthyURL), targetSpec(t, hostileName, r.badURL))
	r.main.pipe.Reconfigure(spec)
	r.main.evaluate(r.clock.Now())
	if d := diff(r.main.series(t), before); d != "" {
		t.Fatalf("a reload with the same targets changed the published numbers:%s", d)
	}
	if err := r.step(r.good); err != nil {
		t.Fatal(err)
	}
	r.check()
}
