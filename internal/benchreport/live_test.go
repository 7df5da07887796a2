package benchreport

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/stepclock"
)

// TestLiveReport scrapes a simulated vLLM over HTTP as `report --url` does,
// every 15 s of simulated time for 5 minutes, and gets the histogram table
// over all of it.
func TestLiveReport(t *testing.T) {
	s, err := sim.New(sim.DemoConfig(7, t0))
	if err != nil {
		t.Fatal(err)
	}
	// The server reads the report's clock: each wait of the report moves
	// both on at once.
	clock := stepclock.New(t0)
	srv := httptest.NewServer(s.Handler(clock.Now))
	defer srv.Close()
	opts := Options{URL: srv.URL + "/metrics", Duration: 5 * time.Minute, Interval: 15 * time.Second, Clock: clock,
		Percentiles: []float64{50, 99}}
	out, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Server) != 1 {
		t.Fatalf("%d server tables (notes %q), want 1", len(out.Server), out.Notes)
	}
	m := out.Server[0]
	if m.Target != liveTarget || !m.Start.Equal(t0) || !m.End.Equal(t0.Add(opts.Duration)) || m.Requests["e2e"] == 0 {
		t.Errorf("table of %s from %s to %s with %v finished requests; want %s over the 5 minutes from %s with some",
			m.Target, m.Start, m.End, m.Requests["e2e"], liveTarget, t0)
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
