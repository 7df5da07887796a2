package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// Fleet is the history of a fleet of simulated vLLM servers as a TSDB would
// hold it after History of 15 s scrapes ending at End: Targets servers
// (instance t0, t1, …), each serving one of Models models on one engine,
// with the families the generated rules read (the TTFT, TPOT, e2e and
// decode-time histograms with every bucket vLLM exposes by default, and the
// running and waiting gauges), plus the per-interval ledger series the generated rules
// would have recorded every 15 s over the same history, per model.
//
// The series are synthetic: each interval draws a Poisson number of
// requests per target and spreads them over the buckets by fixed
// latency distributions. The simulator (package sim) would take hours to
// play 30 days of 500 servers; a cost measurement needs the series and
// sample counts of a real fleet, not its queueing. The ledger series are
// computed from the same increments (not evaluated by an engine), so the
// period windows have their history as they would after the rules ran for
// History.
type Fleet struct {
	Targets, Models int
	History         time.Duration
	End             time.Time
	// Rate is each server's request rate per second.
	Rate float64
	Seed uint64
	// Levels are the rules' hierarchy (rules.Options.Levels), each a
	// multiple of the one before and of Interval: with them the history
	// carries every level series of every ledger series, the sums the
	// rules would have recorded; none for the flat rules.
	Levels []time.Duration
	// Full, when positive and shorter than History, is how much of the
	// history (ending at End) holds every series. Before it the history
	// holds only what the rules read that far back (SparseReads), each
	// within lookback before and Band after the instant it is read at.
	// The level values are still those of the whole history (every step is
	// drawn).
	Full time.Duration
	// Band is how long after End the measured evaluations run.
	Band time.Duration
	// Ahead, when positive, continues every series' scrapes that long past
	// End, the ledger and level series with them: samples ahead of the
	// clock at import, which queries read as their time comes. Without it
	// the evaluations after an import of minutes read servers whose
	// scrapes stopped at End, and the rules' reads of the last seconds
	// found nothing and cost little.
	Ahead time.Duration
	// Phased spreads the servers' scrapes over the interval (Phase) instead
	// of scraping all of them at each step's time: a real server's scrapes
	// are spread so, and an engine fed live then takes them in evenly
	// rather than all at once, at the instant the rules evaluate.
	Phased bool
}

// SparseRead is one read that the rules, with the default hierarchy
// (rules.DefaultOptions) and alert policy (windows 5m, 30m, 1h, 6h, 3d and
// the 30-day period), make of a series more than an hour before an
// evaluation.
type SparseRead struct {
	Offset time.Duration
	// Level is the span of the level series read there (every ledger
	// series' level of that span); 0: the servers' running and waiting
	// gauges.
	Level time.Duration
}

// SparseReads are those reads: the 6h level's terms (the 1h level at 1 to
// 5 hours), the 1d level's (the 6h level at 6, 12 and 18 hours), the 1w
// level's (the 1d level at 1 to 6 days), the 3-day and 30-day windows'
// terms (the 1d level at 1, 2, 28 and 29 days, the 1w level at 1, 2 and 3
// weeks) and the gauges at the starts of the 6h, 3d and 30d windows. A
// history of every series over the last 75 minutes plus these is what
// evaluations within Band after End read of a 30-day history.
var SparseReads = func() []SparseRead {
	const day = 24 * time.Hour
	var rs []SparseRead
	for h := 1; h <= 5; h++ {
		rs = append(rs, SparseRead{time.Duration(h) * time.Hour, time.Hour})
	}
	for _, h := range []int{6, 12, 18} {
		rs = append(rs, SparseRead{time.Duration(h) * time.Hour, 6 * time.Hour})
	}
	for _, d := range []int{1, 2, 3, 4, 5, 6, 28, 29} {
		rs = append(rs, SparseRead{time.Duration(d) * day, day})
	}
	for _, w := range []int{1, 2, 3} {
		rs = append(rs, SparseRead{time.Duration(w) * 7 * day, 7 * day})
	}
	for _, d := range []time.Duration{6 * time.Hour, 3 * day, 30 * day} {
		rs = append(rs, SparseRead{d, 0})
	}
	return rs
}()

// sparseLookback is how far before an instant the rules' reads there
// reach (the gauges' 5-minute lookback; the levels' terms read 15 s).
const sparseLookback = 5 * time.Minute

// keep says which of step ms's samples belong to the history: every
// series within Full of End; before that the gauges (gauges) and the
// levels whose index in f.Levels is set in levels, where a SparseRead
// reads them.
func (f Fleet) keep(ms int64) (all, gauges bool, levels uint64) {
	if f.Full <= 0 || f.Full >= f.History {
		return true, false, 0
	}
	end := f.End.UnixMilli()
	if ms > end-f.Full.Milliseconds() {
		return true, false, 0
	}
	for _, r := range SparseReads {
		at := end - r.Offset.Milliseconds()
		if ms < at-sparseLookback.Milliseconds() || ms > at+f.Band.Milliseconds() {
			continue
		}
		if r.Level == 0 {
			gauges = true
		}
		for k, l := range f.Levels {
			if r.Level != 0 && l == r.Level {
				levels |= 1 << k
			}
		}
	}
	return false, gauges, levels
}

// FleetSLO is the SLO the fleet's rules evaluate: the example
// configuration's (TTFT ≤ 500 ms, TPOT ≤ 50 ms, 99% over 30 days).
const FleetSLO = "interactive"

// Config is the exporter configuration of the fleet, for rules.Generate:
// the example configuration's SLO and the default alert policy.
func (f Fleet) Config() string {
	var b strings.Builder
	b.WriteString("global:\n  scrape_interval: 15s\nslos:\n  - name: " + FleetSLO + "\n    objectives: {ttft: 500ms, tpot: 50ms}\n    goal: 0.99\n    period: 30d\ntargets:\n")
	for i := range f.Targets {
		fmt.Fprintf(&b, "  - name: t%d\n    url: http://127.0.0.1:1/t/%d/metrics\n", i, i)
	}
	return b.String()
}

// Steps is the number of scrapes in the history.
func (f Fleet) Steps() int { return int(f.History / Interval) }

// Start is the time of the first scrape.
func (f Fleet) Start() time.Time { return f.End.Add(-time.Duration(f.Steps()-1) * Interval) }

// fleetFamily is one histogram family the fleet exposes.
type fleetFamily struct {
	name  string
	edges []float64
	// cdf[i] is the share of observations at or under edges[i].
	cdf  []float64
	mean float64
}

// lognormalCDF is the share at or under x of a log-normal with median m and
// shape s.
func lognormalCDF(x, m, s float64) float64 {
	return 0.5 * math.Erfc(-(math.Log(x)-math.Log(m))/(s*math.Sqrt2))
}

func newFleetFamily(name string, edges []float64, median, shape float64) fleetFamily {
	ff := fleetFamily{name: name, edges: edges, mean: median * math.Exp(shape*shape/2)}
	for _, e := range edges {
		ff.cdf = append(ff.cdf, lognormalCDF(e, median, shape))
	}
	return ff
}

// fleetFamilies are the histograms of every server: TTFT around 150 ms,
// TPOT around 25 ms, e2e around 6 s, with a tail past each objective, and
// the decode time around 5.5 s (the rules' decode-time reach reads it;
// every family counts the same requests, as vLLM's do at a finish).
func fleetFamilies() []fleetFamily {
	return []fleetFamily{
		newFleetFamily("vllm:time_to_first_token_seconds", buckets.Default(buckets.TimeToFirstToken), 0.15, 0.8),
		newFleetFamily("vllm:request_time_per_output_token_seconds", buckets.Default(buckets.InterTokenLatency), 0.025, 0.4),
		newFleetFamily("vllm:e2e_request_latency_seconds", buckets.Default(buckets.RequestLatency), 6, 0.6),
		newFleetFamily("vllm:request_decode_time_seconds", buckets.Default(buckets.RequestLatency), 5.5, 0.6),
	}
}

// FleetSample is one value of one series, the series given by its index into
// the label sets Series returned.
type FleetSample struct {
	Series int
	T      int64 // milliseconds
	V      float64
}

// Series lists every series of the fleet, in the order Walk's samples
// refer to them.
func (f Fleet) Series() []labels.Labels {
	var out []labels.Labels
	for t := range f.Targets {
		model := f.model(t)
		base := []string{"instance", "t" + strconv.Itoa(t), "job", "vllm", "model_name", model, "engine", "0"}
		for _, ff := range fleetFamilies() {
			for _, e := range ff.edges {
				out = append(out, labels.FromStrings(append([]string{"__name__", ff.name + "_bucket", "le", strconv.FormatFloat(e, 'g', -1, 64)}, base...)...))
			}
			out = append(out, labels.FromStrings(append([]string{"__name__", ff.name + "_bucket", "le", "+Inf"}, base...)...),
				labels.FromStrings(append([]string{"__name__", ff.name + "_count"}, base...)...),
				labels.FromStrings(append([]string{"__name__", ff.name + "_sum"}, base...)...))
		}
		out = append(out, labels.FromStrings(append([]string{"__name__", "vllm:num_requests_running"}, base...)...),
			labels.FromStrings(append([]string{"__name__", "vllm:num_requests_waiting"}, base...)...))
	}
	for _, name := range f.ledgerNames() {
		for m := range f.Models {
			for _, l := range LedgerSeries {
				ls := []string{"__name__", name(l.Name), "model_name", modelName(m), "slo", FleetSLO}
				if l.Objective != "" {
					ls = append(ls, "objective", l.Objective)
				}
				out = append(out, labels.FromStrings(ls...))
			}
		}
	}
	return out
}

// ledgerNames name the ledger series and then, level after level, their
// level series, in the order Walk writes them.
func (f Fleet) ledgerNames() []func(string) string {
	names := []func(string) string{func(n string) string { return n }}
	for _, l := range f.Levels {
		names = append(names, func(n string) string { return rules.LevelRecord(n, l) })
	}
	return names
}

// levelSums computes the hierarchy's level series from the ledger's
// per-interval values, step after step, as the rules record them: level 1
// sums the last spans[0] values, level k the level below at the offsets 0,
// s, 2s, ... (s its span) up to its own span; a term before the history
// counts 0, as the rules' absent terms do.
type levelSums struct {
	spans []int
	// rings[k] holds the last spans[k] values of level k−1 (level 0: the
	// ledger's), per series; step counts the values added.
	rings [][][]float64
	step  int
}

func newLevelSums(levels []time.Duration, series int) *levelSums {
	ls := &levelSums{}
	for _, l := range levels {
		ls.spans = append(ls.spans, int(l/Interval))
	}
	for _, n := range ls.spans {
		ring := make([][]float64, series)
		for i := range ring {
			ring[i] = make([]float64, n)
		}
		ls.rings = append(ls.rings, ring)
	}
	return ls
}

// add takes one step's ledger values and returns the levels' values,
// level after level, each in the ledger's order.
func (ls *levelSums) add(ledger []float64) []float64 {
	out := make([]float64, 0, len(ls.spans)*len(ledger))
	below := ledger
	for k, n := range ls.spans {
		stride := 1
		if k > 0 {
			stride = ls.spans[k-1]
		}
		level := make([]float64, len(ledger))
		for i, v := range below {
			ring := ls.rings[k][i]
			ring[ls.step%n] = v
			for j := 0; j < n; j += stride {
				level[i] += ring[(ls.step-j+n*(j/n+1))%n]
			}
		}
		out = append(out, level...)
		below = level
	}
	ls.step++
	return out
}

// LedgerRecord is one per-interval ledger series the generated rules
// record, by name and objective label.
type LedgerRecord struct{ Name, Objective string }

// LedgerSeries are the per-interval series the rules of an SLO with a TTFT
// and a TPOT objective record (rules/ledger.go), in the order Walk writes
// them.
var LedgerSeries = []LedgerRecord{
	{"model_name:vllm_slo_finished_requests:interval_increase", ""},
	{"model_name:vllm_slo_first_tokens:interval_increase", ""},
	{"model_name:vllm_slo_ttft_good_first_tokens_lower:interval_increase", ""},
	{"model_name:vllm_slo_ttft_good_first_tokens_upper:interval_increase", ""},
	{"model_name:vllm_slo_observed_requests:interval_increase", "tpot"},
	{"model_name:vllm_slo_observed_good_lower:interval_increase", "tpot"},
	{"model_name:vllm_slo_observed_good_upper:interval_increase", "tpot"},
	{"model_name:vllm_slo_finished_good_lower:interval_increase", "tpot"},
	{"model_name:vllm_slo_finished_good_upper:interval_increase", "tpot"},
	{"model_name:vllm_slo_joint_good_lower:interval_increase", "all"},
	{"model_name:vllm_slo_joint_good_upper:interval_increase", "all"},
	{"model_name:vllm_slo_new_series_in_flight:interval", ""},
	{"model_name:vllm_slo_new_series_running:interval", ""},
}

func (f Fleet) model(target int) string { return modelName(target % max(f.Models, 1)) }

func modelName(m int) string { return fmt.Sprintf("org/model-%d", m) }

// Walk calls emit with every sample of the fleet, scrape after scrape (all
// series of one scrape time, then the next), and stops at emit's first
// error. With Phased, a step's ledger and level series come first, at the
// step's time, and then each server's scrape at its phase: the samples'
// times never go down.
func (f Fleet) Walk(emit func(FleetSample) error) error {
	fams := fleetFamilies()
	perTarget := 2
	for _, ff := range fams {
		perTarget += len(ff.edges) + 3
	}
	cum := make([]float64, f.Targets*perTarget)
	rng := rand.New(rand.NewPCG(f.Seed, 0x5eed))
	ledger := make([]float64, f.Models*len(LedgerSeries))
	sums := newLevelSums(f.Levels, len(ledger))
	lambda := f.Rate * Interval.Seconds()
	start := f.Start()
	for k := range f.Steps() + int(max(f.Ahead, 0)/Interval) {
		ms := start.Add(time.Duration(k) * Interval).UnixMilli()
		all, gauges, levels := f.keep(ms)
		clear(ledger)
		gaugeAt := 0
		for t := range f.Targets {
			n := poisson(rng, lambda)
			if k == 0 {
				n = 0 // the first scrape: counters as the history begins
			}
			good, at := drawScrape(rng, fams, cum[t*perTarget:(t+1)*perTarget], n, f.Rate)
			gaugeAt = at
			l := ledger[(t%max(f.Models, 1))*len(LedgerSeries):]
			for j, v := range []float64{n, n, good[0], good[0], n, good[1], good[1], good[1], good[1],
				math.Max(0, good[0]+good[1]-n), math.Min(good[0], good[1]), 0, 0} {
				l[j] += v
			}
		}
		if all {
			levels = 1<<len(f.Levels) - 1
		}
		servers := func() error {
			return f.emitServers(emit, ms, cum, perTarget, all, gauges, gaugeAt)
		}
		records := func() error {
			return f.emitRecords(emit, f.Targets*perTarget, ms, append(slices.Clone(ledger), sums.add(ledger)...), len(ledger), all, levels)
		}
		steps := []func() error{servers, records}
		if f.Phased {
			steps = []func() error{records, servers}
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Phase is how long after each step's time target t is scraped: 0
// without Phased, else its share of the interval, so that the fleet's
// scrapes spread evenly over it, as Prometheus and vmagent spread their
// targets' scrapes (each at an offset of its own within the interval).
func (f Fleet) Phase(t int) time.Duration {
	if !f.Phased || f.Targets <= 0 {
		return 0
	}
	return (Interval * time.Duration(t) / time.Duration(f.Targets)).Truncate(time.Millisecond)
}

// emitServers emits every server's series of one step from cum, at the
// step's time plus the server's Phase: all of them, or with gauges only
// the gauges (from gaugeAt in each server's row).
func (f Fleet) emitServers(emit func(FleetSample) error, ms int64, cum []float64, perTarget int, all, gauges bool, gaugeAt int) error {
	if !all && !gauges {
		return nil
	}
	from := 0
	if !all {
		from = gaugeAt
	}
	for t := range f.Targets {
		at := ms + f.Phase(t).Milliseconds()
		if err := emitRange(emit, t*perTarget, at, cum[t*perTarget:(t+1)*perTarget], from, perTarget); err != nil {
			return err
		}
	}
	return nil
}

// emitRecords emits one step's ledger series (the first n of values, with
// all; series base on) and the level series whose index in f.Levels is set in levels.
func (f Fleet) emitRecords(emit func(FleetSample) error, base int, ms int64, values []float64, n int, all bool, levels uint64) error {
	if all {
		if err := emitRange(emit, base, ms, values, 0, n); err != nil {
			return err
		}
	}
	for k := range f.Levels {
		if levels&(1<<k) == 0 {
			continue
		}
		if err := emitRange(emit, base, ms, values, (k+1)*n, (k+2)*n); err != nil {
			return err
		}
	}
	return nil
}

// drawScrape adds one scrape's n requests to a server's cumulative row
// (each histogram's buckets, +Inf, count and sum, then the running and
// waiting gauges, drawn afresh) and returns the TTFT-good and TPOT-good
// counts among them and the index of the gauges in row.
func drawScrape(rng *rand.Rand, fams []fleetFamily, row []float64, n, rate float64) (good [3]float64, gauges int) {
	i := 0
	for fi, ff := range fams {
		for ei := range ff.edges {
			d := math.Round(n * ff.cdf[ei])
			row[i] += d
			if ff.edges[ei] == 0.5 && fi == 0 || ff.edges[ei] == 0.05 && fi == 1 {
				good[fi] = d
			}
			i++
		}
		row[i] += n   // +Inf
		row[i+1] += n // count
		row[i+2] += n * ff.mean
		i += 3
	}
	running := poisson(rng, rate*3)
	row[i], row[i+1] = running, math.Max(0, running-rate*3)
	return good, i
}

// emitRange emits values[from:to] at ms, values[j] being series base + j.
func emitRange(emit func(FleetSample) error, base int, ms int64, values []float64, from, to int) error {
	for j := from; j < to; j++ {
		if err := emit(FleetSample{Series: base + j, T: ms, V: values[j]}); err != nil {
			return err
		}
	}
	return nil
}

// poisson draws a Poisson count with mean lambda (normal approximation
// above 30, enough for a cost measurement).
func poisson(rng *rand.Rand, lambda float64) float64 {
	if lambda > 30 {
		return math.Max(0, math.Round(lambda+math.Sqrt(lambda)*rng.NormFloat64()))
	}
	l, k, p := math.Exp(-lambda), 0.0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}
