package report

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/sim"
)

// fakeClock is shared by the simulated server and the scraper: the server
// reads the time, the scraper stamps the scrape with it and moves it on.
type fakeClock struct {
	mu  sync.Mutex
	cur time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

func (c *fakeClock) stamp() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.cur
	c.cur = c.cur.Add(15 * time.Second)
	return t
}

// TestLiveScrapes scrapes a simulated vLLM over HTTP as `report --url`
// does and gets the histogram table from the scrapes.
func TestLiveScrapes(t *testing.T) {
	s, err := sim.New(sim.DemoConfig(7, t0))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{cur: t0}
	srv := httptest.NewServer(s.Handler(clock.now))
	defer srv.Close()
	scr, err := FetchScraper(srv.URL+"/metrics", 5*time.Second, clock.stamp)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Record(context.Background(), scr, 300*time.Millisecond, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 2 {
		t.Fatalf("%d scrapes, want at least 2", len(entries))
	}
	for _, e := range entries {
		if e.Error != "" || !strings.Contains(e.Body, "vllm:e2e_request_latency_seconds_bucket") {
			t.Fatalf("scrape %+v", e.Error)
		}
	}
	models, notes, err := EvaluateScrapes(entries, ServerOptions{Quantiles: []float64{0.5, 0.99}})
	if err != nil {
		t.Fatalf("%v (notes %q)", err, notes)
	}
	want := time.Duration(len(entries)-1) * 15 * time.Second
	if len(models) != 1 || models[0].End.Sub(models[0].Start) != want || models[0].Requests["e2e"] == 0 {
		t.Errorf("models %+v, want one over %s with finished requests", models, want)
	}
}

// TestRecordStopsWithContext returns what it has when cancelled.
func TestRecordStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	scr := func(context.Context) (e recording.Entry, err error) {
		n++
		if n == 3 {
			cancel()
		}
		return e, nil
	}
	got, err := Record(ctx, scr, time.Hour, time.Millisecond)
	if err != nil || len(got) != 3 {
		t.Errorf("got %d scrapes, err %v; want 3", len(got), err)
	}
	if _, err := Record(ctx, scr, 0, time.Second); err == nil {
		t.Error("zero duration accepted")
	}
}

// TestBuildErrors: bad options are refused with a reason.
func TestBuildErrors(t *testing.T) {
	cases := []struct {
		opts Options
		want string
	}{
		{Options{}, "nothing to report"},
		{Options{URL: "ftp://x", Duration: time.Second, Interval: time.Second}, "scheme"},
		{Options{URL: "http://x", Recording: "r"}, "exclude each other"},
		{Options{Bench: []string{"testdata/seed.json"}, Percentiles: []float64{120}}, "percentile 120"},
		{Options{Bench: []string{"testdata/seed.json"}, Rank: "median"}, `rank "median"`},
		{Options{Bench: []string{"testdata/seed.json"}, Goodput: []string{"ttft"}}, "KEY:VALUE"},
		{Options{Bench: []string{"testdata/none.json"}}, "none.json"},
		{Options{Recording: "r", Plot: "p.svg"}, "--plot needs --bench"},
	}
	for _, c := range cases {
		_, err := Build(context.Background(), c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.opts, err, c.want)
		}
	}
}
