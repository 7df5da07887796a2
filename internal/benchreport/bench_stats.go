package benchreport

import (
	"math"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// BenchOptions chooses how bench files are evaluated.
type BenchOptions struct {
	// Percentiles in percent (vLLM's --metric-percentiles), e.g. 50 90 95 99.
	Percentiles []float64
	// Nearest reads percentiles by nearest rank (the ceil(q·n)-th smallest,
	// the convention of our histogram brackets) instead of numpy's linear
	// interpolation, which vLLM uses and which is the default.
	Nearest bool
	// Goodput are the objectives of vLLM's --goodput; none means no goodput.
	Goodput []Objective
	// GPUHourlyCost is the cost of the GPUs per hour; 0 means no cost rows.
	GPUHourlyCost float64
}

// DefaultPercentiles are the percentiles reported unless told otherwise.
var DefaultPercentiles = []float64{50, 90, 95, 99}

// Stat summarises one metric in seconds, as vLLM's summary does: mean,
// population standard deviation (numpy's default), median and percentiles.
// Count 0 means the metric had no sample (vLLM would print 0).
type Stat struct {
	Count       int          `json:"count"`
	Mean        float64      `json:"mean_s"`
	Std         float64      `json:"std_s"`
	Median      float64      `json:"median_s"`
	Percentiles []Percentile `json:"percentiles"`
}

// Percentile is one percentile of a per-request metric.
type Percentile struct {
	// Q is the level as a fraction (0.99).
	Q float64 `json:"q"`
	// Value is in seconds.
	Value float64 `json:"value_s"`
}

// Value returns the percentile p (in percent), if it was computed.
func (s Stat) Value(p float64) (float64, bool) {
	for _, x := range s.Percentiles {
		if x.Q*100 == p || math.Abs(x.Q*100-p) < 1e-9 {
			return x.Value, true
		}
	}
	return 0, false
}

// GoodputResult is goodput under the --goodput objectives.
type GoodputResult struct {
	Objectives []Objective `json:"objectives"`
	// GoodRequests met every objective; GoodTokens are their output tokens.
	GoodRequests      int     `json:"good_requests"`
	GoodTokens        int     `json:"good_tokens"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	TokensPerSecond   float64 `json:"tokens_per_second"`
}

// Concurrency compares the measured mean number of requests in flight with
// Little's Law.
type Concurrency struct {
	// Little is λ·W: completed requests per second of duration times the
	// mean e2e latency (equivalently the summed latencies over duration).
	Little float64 `json:"little"`
	// Measured is the time-average of the requests in flight over the busy
	// span, from the first send to the last answer, measured from the
	// request intervals [start, start + latency); Peak is the most at once
	// (vLLM's max_concurrent_requests, half-open intervals). HasMeasured is
	// false for files without start_times: then only Little is known.
	Measured    float64 `json:"measured"`
	Peak        int     `json:"peak"`
	Span        float64 `json:"span_s"`
	HasMeasured bool    `json:"has_measured"`
}

// Cost is the GPU cost per million output tokens.
type Cost struct {
	// ThroughputBasis divides by all output tokens, GoodputBasis by the
	// tokens of good requests only (+Inf when there are none).
	ThroughputBasis Num  `json:"throughput_basis"`
	GoodputBasis    Num  `json:"goodput_basis"`
	HasGoodput      bool `json:"has_goodput"`
}

// BenchResult is one bench file evaluated with vLLM's definitions.
type BenchResult struct {
	Name           string  `json:"name"`
	ModelID        string  `json:"model_id,omitempty"`
	RequestRate    Num     `json:"request_rate"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	Duration       float64 `json:"duration_s"`
	Completed      int     `json:"completed"`
	Failed         int     `json:"failed"`
	TotalInput     int     `json:"total_input_tokens"`
	TotalOutput    int     `json:"total_output_tokens"`
	// Rates over Duration, as vLLM computes them.
	RequestThroughput    float64 `json:"request_throughput"`
	OutputThroughput     float64 `json:"output_throughput"`
	TotalTokenThroughput float64 `json:"total_token_throughput"`
	TTFT                 Stat    `json:"ttft"`
	TPOT                 Stat    `json:"tpot"`
	ITL                  Stat    `json:"itl"`
	E2EL                 Stat    `json:"e2el"`
	// Goodput is nil without objectives.
	Goodput     *GoodputResult `json:"goodput,omitempty"`
	Concurrency Concurrency    `json:"concurrency"`
	// Cost is nil without a GPU hourly cost.
	Cost *Cost `json:"cost,omitempty"`
	// Notes say what the reader should know: a missing list, a count that
	// differs from vLLM's own.
	Notes []string `json:"notes,omitempty"`
}

// Evaluate computes every number of one bench file with vLLM's definitions
// (vllm/benchmarks/serve.py, calculate_metrics):
//
//   - Only successful requests count in the latency statistics, in
//     total_input_tokens and in the output tokens; failed ones count in Failed.
//   - TTFT is the time to the first chunk; e2el is the latency (last chunk).
//   - TPOT of a request is (latency − TTFT)/(output_len − 1), output_len the
//     server's token count. Requests with one output token have no TPOT
//     sample, but for goodput their TPOT is 0 (vLLM's all_tpots).
//   - ITL pools every chunk gap of every successful request.
//   - Means, standard deviations (population) and percentiles (linear
//     interpolation) are computed as numpy computes them, down to the
//     summation order, so they equal vLLM's bit for bit; nearest rank is an
//     option, and then the median is the nearest-rank 50th percentile too.
//   - A request is good when every objective holds: value <= threshold
//     (ms/1000), compared exactly as vLLM does. Goodput is good requests (and,
//     our addition, their output tokens) per second of Duration.
//   - Every rate divides by Duration, the benchmark's wall-clock time.
func Evaluate(f *BenchFile, opts BenchOptions) BenchResult {
	pcts := opts.Percentiles
	if len(pcts) == 0 {
		pcts = DefaultPercentiles
	}
	res := BenchResult{Name: f.Name, ModelID: f.ModelID, RequestRate: Num(f.RequestRate),
		MaxConcurrency: f.MaxConcurrency, Duration: f.Duration}
	var ttfts, tpots, allTPOTs, itls, e2els []float64
	var ok []BenchRequest
	for _, r := range f.Requests {
		if !r.OK {
			res.Failed++
			continue
		}
		ok = append(ok, r)
		res.TotalInput += r.PromptLen
		res.TotalOutput += r.OutputLen
		tpot := 0.0
		if r.OutputLen > 1 {
			tpot = (r.Latency - r.TTFT) / float64(r.OutputLen-1)
			tpots = append(tpots, tpot)
		}
		allTPOTs = append(allTPOTs, tpot)
		itls = append(itls, r.ITLs...)
		ttfts = append(ttfts, r.TTFT)
		e2els = append(e2els, r.Latency)
	}
	res.Completed = len(ok)
	d := f.Duration
	res.RequestThroughput = float64(res.Completed) / d
	res.OutputThroughput = float64(res.TotalOutput) / d
	res.TotalTokenThroughput = float64(res.TotalInput+res.TotalOutput) / d
	res.TTFT = stat(ttfts, pcts, opts.Nearest)
	res.TPOT = stat(tpots, pcts, opts.Nearest)
	res.ITL = stat(itls, pcts, opts.Nearest)
	res.E2EL = stat(e2els, pcts, opts.Nearest)
	if len(opts.Goodput) > 0 {
		g := &GoodputResult{Objectives: opts.Goodput}
		for i, r := range ok {
			values := map[string]float64{"ttft": ttfts[i], "tpot": allTPOTs[i], "e2el": e2els[i]}
			good := true
			for _, o := range opts.Goodput {
				good = good && o.Seconds() >= values[o.Metric]
			}
			if good {
				g.GoodRequests++
				g.GoodTokens += r.OutputLen
			}
		}
		g.RequestsPerSecond = float64(g.GoodRequests) / d
		g.TokensPerSecond = float64(g.GoodTokens) / d
		res.Goodput = g
	}
	res.Concurrency = concurrency(f, ok, res.E2EL, d)
	if !f.HasStartTimes {
		res.Notes = append(res.Notes, "no start_times in the file: concurrency from Little's Law only")
	}
	if !f.HasLatencies {
		res.Notes = append(res.Notes, "no latencies in the file: e2e latency is TTFT + the sum of chunk gaps (vLLM's up to rounding)")
	}
	if opts.GPUHourlyCost > 0 {
		res.Cost = cost(opts.GPUHourlyCost, res.OutputThroughput, res.Goodput)
	}
	if f.Completed >= 0 && f.Completed != res.Completed {
		res.Notes = append(res.Notes, "vLLM saved completed="+itoa(f.Completed)+" but the per-request lists hold "+itoa(res.Completed)+" successful requests")
	}
	return res
}

// stat summarises samples (in vLLM's order) with numpy's arithmetic;
// percentiles are in percent. Nearest rank replaces numpy's percentile (and
// median) when asked.
func stat(samples []float64, pcts []float64, nearest bool) Stat {
	if len(samples) == 0 {
		return Stat{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	read := npPercentile
	if nearest {
		read = func(p float64, sorted []float64) float64 { return slo.ExactQuantile(p/100, sorted) }
	}
	st := Stat{Count: len(s), Mean: npMean(samples), Std: npStd(samples), Median: npMedian(s)}
	if nearest {
		st.Median = read(50, s)
	}
	for _, p := range pcts {
		if p >= 0 && p <= 100 {
			st.Percentiles = append(st.Percentiles, Percentile{Q: p / 100, Value: read(p, s)})
		}
	}
	return st
}

// concurrency computes Little's λ·W and, with start times, the measured
// time-average and peak of the requests in flight.
func concurrency(f *BenchFile, ok []BenchRequest, e2el Stat, d float64) Concurrency {
	c := Concurrency{Little: float64(e2el.Count) / d * e2el.Mean}
	if !f.HasStartTimes || len(ok) == 0 {
		return c
	}
	type event struct {
		t     float64
		delta int
	}
	events := make([]event, 0, 2*len(ok))
	first, last, busy := math.Inf(1), math.Inf(-1), 0.0
	for _, r := range ok {
		end := r.Start + r.Latency
		first, last = math.Min(first, r.Start), math.Max(last, end)
		busy += r.Latency
		events = append(events, event{r.Start, 1}, event{end, -1})
	}
	slices.SortFunc(events, func(a, b event) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return a.delta - b.delta // departures first: half-open intervals
	})
	cur := 0
	for _, e := range events {
		cur += e.delta
		c.Peak = max(c.Peak, cur)
	}
	c.Span, c.HasMeasured = last-first, true
	if c.Span > 0 {
		c.Measured = busy / c.Span
	}
	return c
}

// cost prices a million output tokens on the throughput and goodput bases.
func cost(hourly, throughput float64, g *GoodputResult) *Cost {
	c := &Cost{ThroughputBasis: Num(math.Inf(1)), GoodputBasis: Num(math.Inf(1))}
	if v, ok := slo.CostPerMillion(hourly, slo.Exact(throughput)); ok {
		c.ThroughputBasis = Num(v.Estimate)
	}
	if g != nil {
		c.HasGoodput = true
		if v, ok := slo.CostPerMillion(hourly, slo.Exact(g.TokensPerSecond)); ok {
			c.GoodputBasis = Num(v.Estimate)
		}
	}
	return c
}
