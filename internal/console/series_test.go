package console

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

func seriesURL(model, rng, window string) string {
	v := url.Values{"target": {"gpu0"}, "model": {model}, "slo": {"interactive"}, "range": {rng}}
	if window != "" {
		v.Set("window", window)
	}
	return "/api/series?" + v.Encode()
}

// checkBand fails when a band's arrays differ in length from the times, or
// when an estimate leaves its bounds (a null upper bound is +Inf). It returns
// how many points hold an estimate.
func checkBand(t *testing.T, name string, b Band, n int) int {
	t.Helper()
	if len(b.Estimate) != n || len(b.Lower) != n || len(b.Upper) != n {
		t.Fatalf("%s: lengths %d %d %d, want %d", name, len(b.Estimate), len(b.Lower), len(b.Upper), n)
	}
	known := 0
	for i := range n {
		e, lo, hi := float64(b.Estimate[i]), float64(b.Lower[i]), float64(b.Upper[i])
		if math.IsNaN(e) {
			continue
		}
		known++
		if math.IsNaN(lo) || lo > e || (!math.IsNaN(hi) && e > hi) {
			t.Errorf("%s point %d: estimate %v outside [%v, %v]", name, i, e, lo, hi)
		}
	}
	return known
}

// checkSeriesShapesAndBands draws 30 minutes (20 healthy, 10 overloaded):
// every array has one value per time, times strictly increase, every
// estimate lies inside its band, and the overload shows as a spent budget
// and burn rates over the page threshold.
func checkSeriesShapesAndBands(t *testing.T, r *rig) {
	c := r.console()
	s := series(t, c, seriesURL(hostile, "all", ""))
	n := len(s.Times)
	if n < DefaultPoints/2 || n > DefaultPoints {
		t.Fatalf("%d times for a %d-point range of 30 minutes scraped every 15s", n, DefaultPoints)
	}
	for i := 1; i < n; i++ {
		if s.Times[i] <= s.Times[i-1] {
			t.Fatalf("times not increasing at %d: %v then %v", i, s.Times[i-1], s.Times[i])
		}
	}
	if got, want := s.To, unixSeconds(r.now); got != want {
		t.Errorf("series ends at %v, want the newest scrape %v", got, want)
	}
	if s.Model != hostile || s.Window != "1m" {
		t.Errorf("model %q window %q", s.Model, s.Window)
	}
	if checkBand(t, "budget", s.Budget, n) < n/2 {
		t.Error("budget mostly missing")
	}
	if len(s.Covered) != n || len(s.Throughput) != n {
		t.Errorf("covered %d, throughput %d values, want %d", len(s.Covered), len(s.Throughput), n)
	}
	if len(s.Burns) != 2 {
		t.Fatalf("%d burn series, want the SLO's 2 alerts", len(s.Burns))
	}
	for _, b := range s.Burns {
		checkBand(t, "burn long "+b.Long, b.LongBurn, n)
		checkBand(t, "burn short "+b.Short, b.ShortBurn, n)
	}
	if got := float64(s.Burns[0].ShortBurn.Lower[n-1]); !(got > s.Burns[0].Factor) {
		t.Errorf("10 minutes into a 4x overload the short burn rate's lower bound is %v, want above %v", got, s.Burns[0].Factor)
	}
	if got := float64(s.Budget.Upper[n-1]); !(got < float64(s.Budget.Lower[n/2])) {
		t.Errorf("budget at the end %v not below the healthy lower bound %v", got, s.Budget.Lower[n/2])
	}
	for _, a := range s.Attainment {
		if checkBand(t, "attainment "+a.Name, a.Band, n) == 0 {
			t.Errorf("attainment %s never known", a.Name)
		}
	}
	if len(s.Attainment) != 3 || s.Attainment[0].Name != slo.AllKey {
		t.Errorf("attainment series %v, want all, ttft, tpot", s.Attainment)
	}
	if len(s.Latency) != 3*3 {
		t.Errorf("%d latency series, want 3 metrics x 3 quantiles", len(s.Latency))
	}
	for _, l := range s.Latency {
		checkBand(t, fmt.Sprintf("latency %s p%v", l.Metric, 100*l.Quantile), l.Band, n)
	}
	checkBand(t, "goodput", s.Goodput, n)
	for i := range n {
		if g, tp := float64(s.Goodput.Upper[i]), float64(s.Throughput[i]); g > tp*(1+1e-12) {
			t.Errorf("point %d: goodput upper %v above throughput %v", i, g, tp)
		}
	}
	if checkBand(t, "abandoned", s.Abandoned, n) < n/2 {
		t.Error("abandoned bound mostly missing")
	}
	if len(s.Aborted) != n {
		t.Fatalf("%d aborted values, want %d", len(s.Aborted), n)
	}
	for i, v := range s.Aborted {
		// The simulator serves vLLM's abort series and, like released
		// vLLM, counts no client cancellation in it.
		if known := !math.IsNaN(float64(s.Abandoned.Estimate[i])); known && v != 0 {
			t.Errorf("point %d: vLLM's aborted count %v, want the 0 it exposes", i, v)
		}
	}
	if len(s.Concurrency) != 3 {
		t.Errorf("%d stages", len(s.Concurrency))
	}
	for _, st := range s.Concurrency {
		if len(st.Predicted) != n || len(st.Observed) != n {
			t.Errorf("stage %s: %d, %d values", st.Stage, len(st.Predicted), len(st.Observed))
		}
	}
}

// checkSeriesNewestPointIsTheLiveReport: the last point of a series is what
// the live evaluation says now.
func checkSeriesNewestPointIsTheLiveReport(t *testing.T, r *rig) {
	s := series(t, r.console(), seriesURL(hostile, "1h", "5m"))
	n := len(s.Times)
	m := r.rep.Targets[0].Models[0]
	live := m.Windows[1].SLOs[0].Objectives[slo.AllKey]
	if got := s.Attainment[0]; float64(got.Estimate[n-1]) != live.Estimate || float64(got.Lower[n-1]) != live.Lower || float64(got.Upper[n-1]) != live.Upper {
		t.Errorf("newest attainment [%v %v %v], live %+v", got.Lower[n-1], got.Estimate[n-1], got.Upper[n-1], live)
	}
	if got, want := float64(s.Budget.Lower[n-1]), m.Budgets[0].Remaining.Lower; got != want {
		t.Errorf("newest budget lower %v, live %v", got, want)
	}
	if got, want := float64(s.Burns[0].LongBurn.Upper[n-1]), m.Burns[0].Long.Upper; got != want {
		t.Errorf("newest long burn upper %v, live %v", got, want)
	}
}

// checkHistogramView: the newest window's histograms hold their buckets'
// counts exactly (bars and reconstructed density alike), and every quantile
// estimate lies inside its bracket.
func checkHistogramView(t *testing.T, r *rig) {
	s := series(t, r.console(), seriesURL(hostile, "1h", "5m"))
	if len(s.Histograms) != 3 {
		t.Fatalf("%d histograms, want ttft, tpot and e2e", len(s.Histograms))
	}
	w, ok := r.pipe.EvaluateModelAt("gpu0", hostile, r.now)
	if ok != nil {
		t.Fatal(ok)
	}
	win := windowOf(w, 5*time.Minute)
	for _, h := range s.Histograms {
		if len(h.X) < 2 || len(h.Bars) != len(h.X) || len(h.Density) != len(h.X) {
			t.Fatalf("%s: lengths x %d bars %d density %d", h.Metric, len(h.X), len(h.Bars), len(h.Density))
		}
		for i := 1; i < len(h.X); i++ {
			if !(h.X[i] > h.X[i-1]) {
				t.Fatalf("%s: x not increasing at %d", h.Metric, i)
			}
		}
		src := win.Window.Latency[slo.Metric(h.Metric)]
		if h.Count != src.Total() {
			t.Errorf("%s: count %v, window %v", h.Metric, h.Count, src.Total())
		}
		// Area per bucket: bars and density over a bucket's Steps
		// sub-intervals each integrate to its count.
		var bars, dens float64
		for i := 0; i+1 < len(h.X); i++ {
			width := math.Log10(float64(h.X[i+1]) / float64(h.X[i]))
			bars += float64(h.Bars[i]) * width
			dens += float64(h.Density[i]) * width
		}
		checkNoSpikes(t, h)
		drawn := h.Count - h.AboveLast
		if math.Abs(bars-drawn) > 1e-9*drawn {
			t.Errorf("%s: bars hold %v observations, want %v", h.Metric, bars, drawn)
		}
		// The first bucket drawn from a tenth of its edge may lose a little.
		if dens > drawn*(1+1e-9) || dens < drawn*0.99 {
			t.Errorf("%s: density holds %v observations, want about %v", h.Metric, dens, drawn)
		}
		for _, q := range h.Quantiles {
			e, lo, hi := float64(q.Estimate), float64(q.Lower), float64(q.Upper)
			if math.IsNaN(e) || math.IsNaN(lo) || lo > e || (!math.IsNaN(hi) && e > hi) {
				t.Errorf("%s p%v: estimate %v outside [%v, %v]", h.Metric, 100*q.Q, e, lo, hi)
			}
		}
	}
}

// checkNoSpikes: the density never rises above twice the tallest bar (a
// tent over a bucket among empty ones), where drawing the estimator's steps
// reached four times a bucket's height.
func checkNoSpikes(t *testing.T, h HistogramView) {
	t.Helper()
	var tallest, peak float64
	for i := range h.Bars {
		tallest = math.Max(tallest, float64(h.Bars[i]))
		peak = math.Max(peak, float64(h.Density[i]))
	}
	if peak > 2*tallest {
		t.Errorf("%s: density peaks at %v, over twice the tallest bar %v", h.Metric, peak, tallest)
	}
}

// TestSeriesErrorsAndCache: bad queries get clear errors with the right
// status; a repeated query is served from the cache until a new scrape.
func TestSeriesErrorsAndCache(t *testing.T) {
	r := newRig(t, 6)
	c := r.console()
	for _, tc := range []struct {
		target string
		code   int
		want   string
	}{
		{"/api/series?target=gpu0&model=x&slo=nope", http.StatusNotFound, `SLO "nope"`},
		{"/api/series?target=nope&model=x&slo=interactive", http.StatusNotFound, `unknown target "nope"`},
		{"/api/series?target=gpu0&model=x&slo=interactive", http.StatusNotFound, `unknown model "x"`},
		{seriesURL(hostile, "yesterday", ""), http.StatusBadRequest, `range "yesterday"`},
		{seriesURL(hostile, "1h", "7m"), http.StatusBadRequest, `window "7m" is not configured`},
	} {
		code, body := get(t, c, tc.target)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d %q, want %d with %q", tc.target, code, body, tc.code, tc.want)
		}
	}
	u := seriesURL(hostile, "1h", "")
	_, first := get(t, c, u)
	if c.cache.len() != 1 {
		t.Fatalf("cache holds %d series after one good query", c.cache.len())
	}
	_, again := get(t, c, u)
	if again != first || c.cache.len() != 1 {
		t.Error("a repeated query was not answered from the cache")
	}
	r.scrape(t, r.now.Add(15*time.Second))
	_, fresh := get(t, c, u)
	if fresh == first || c.cache.len() != 2 {
		t.Error("a new scrape did not give a new series")
	}
	spec := r.pipe.Spec()
	spec.SLOs = []slo.SLO{interactive}
	spec.SLOs[0].Goal = 0.9
	r.pipe.Reconfigure(spec)
	_, reloaded := get(t, c, u)
	if reloaded == fresh || !strings.Contains(reloaded, `"goal":0.9,`) {
		t.Error("a reload that changed the goal did not give a new series")
	}
}

// TestCacheIsBounded: the cache never holds more than its capacity, and
// evicts the least recently used.
func TestCacheIsBounded(t *testing.T) {
	c := newSeriesCache(3)
	for i := range 10 {
		c.put(fmt.Sprint(i), []byte{byte(i)})
		if i >= 7 {
			c.get("7") // keep 7 recently used
		}
	}
	if c.len() != 3 {
		t.Fatalf("cache holds %d entries, capacity 3", c.len())
	}
	if _, ok := c.get("9"); !ok {
		t.Error("the newest entry was evicted")
	}
	if _, ok := c.get("7"); !ok {
		t.Error("the recently used entry was evicted")
	}
	if _, ok := c.get("6"); ok {
		t.Error("the least recently used entry was kept")
	}
}

// countingHistory counts the windows a series evaluates.
type countingHistory struct {
	History
	calls int
}

func (c *countingHistory) EvaluateModelAt(target, model string, end time.Time, windows ...time.Duration) (pipeline.ModelReport, error) {
	c.calls++
	return c.History.EvaluateModelAt(target, model, end, windows...)
}

// TestPointsAreCapped: a request cannot ask for more windows than maxPoints.
func TestPointsAreCapped(t *testing.T) {
	r := newRig(t, 6)
	h := &countingHistory{History: r.pipe}
	c := New(Options{Report: func() *pipeline.Report { return r.rep }, History: h})
	series(t, c, seriesURL(hostile, "all", "")+"&points=100000")
	if h.calls != maxPoints {
		t.Errorf("%d windows evaluated, want the cap %d", h.calls, maxPoints)
	}
}

// len is the number of cached bodies.
func (c *seriesCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
