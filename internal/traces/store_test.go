package traces

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// clock is a virtual clock for a store.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// at returns the clock function of a virtual clock reading t0 + d.
func at(d time.Duration) func() time.Time { return (&clock{t0.Add(d)}).Now }

func span(id string, end time.Duration, e2e float64) Span {
	return Span{
		Target: "gpu0", Model: "m", RequestID: id, End: t0.Add(end),
		TTFT: e2e / 4, E2E: e2e, Queue: 0.01, Prefill: e2e / 5, Decode: e2e / 2, Inference: e2e / 2,
		PromptTokens: 100, CompletionTokens: 11, FinishReason: "stop",
	}
}

func TestRecordSize(t *testing.T) {
	if got := unsafe.Sizeof(record{}); got != RecordBytes {
		t.Errorf("record is %d bytes, RecordBytes says %d", got, RecordBytes)
	}
	if RecordBytes >= 100 {
		t.Errorf("a retained request costs %d bytes, the target is under 100", RecordBytes)
	}
}

func TestStoreOrderDuplicatesAndRetention(t *testing.T) {
	c := &clock{t0.Add(time.Minute)}
	s := NewStore(Limits{Retain: time.Minute, Now: c.Now})
	out := s.Add([]Span{span("c", 50*time.Second, 1), span("a", 10*time.Second, 1), span("b", 30*time.Second, 1)})
	if out.Added != 3 {
		t.Fatalf("Add = %+v", out)
	}
	// The same request again (a retry), and a different request reusing the
	// id at another time.
	out = s.Add([]Span{span("a", 10*time.Second, 1), span("a", 40*time.Second, 1)})
	if out.Duplicates != 1 || out.Added != 1 {
		t.Errorf("Add = %+v, want one duplicate and one new request", out)
	}
	sel := s.Select("gpu0", "m", false, t0.Add(10*time.Second), t0.Add(40*time.Second))
	if len(sel.All) != 2 {
		t.Errorf("(10s, 40s] holds %d, want b and the second a", len(sel.All))
	}
	// The clock moves to 2m: records older than 1m before it go, and a
	// span from then is too old.
	c.now = t0.Add(2 * time.Minute)
	s.Add([]Span{span("d", 2*time.Minute, 1)})
	if n, _ := s.Retained(); n != 1 {
		t.Errorf("%d records kept after the retention moved, want 1", n)
	}
	if out := s.Add([]Span{span("e", 30*time.Second, 1)}); out.TooOld != 1 {
		t.Errorf("Add = %+v, want too old", out)
	}
}

func TestStoreCaps(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, MaxRecords: 2, MaxModels: 1, MaxAdapters: 2, Now: at(time.Minute)})
	other := span("x", time.Second, 1)
	other.Model = "other"
	a1, a2, a3 := span("1", time.Second, 1), span("2", 2*time.Second, 1), span("3", 3*time.Second, 1)
	a1.Adapter, a2.Adapter, a3.Adapter = "", "lora-a", "lora-b"
	out := s.Add([]Span{a1, other, a2, a3})
	if out.Refused != 2 || out.Added != 2 {
		t.Errorf("Add = %+v, want the second model and the third adapter refused", out)
	}
	s.Add([]Span{span("4", 4*time.Second, 1)})
	if n, _ := s.Retained(); n != 2 {
		t.Errorf("%d records kept, cap 2", n)
	}
}

func TestSelectDerivesTPOT(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Minute)})
	noDecode := span("b", 2*time.Second, 2)
	noDecode.Decode = math.NaN()
	one := span("c", 3*time.Second, 1)
	one.CompletionTokens = 1
	s.Add([]Span{span("a", time.Second, 2), noDecode, one})
	sel := s.Select("gpu0", "m", false, t0, t0.Add(time.Minute))
	if got := sel.All[0].TPOT; got != 1.0/10 {
		t.Errorf("TPOT from decode = %v, want decode/(n-1) = 0.1", got)
	}
	if got := sel.All[1].TPOT; got != (2-0.5)/10 {
		t.Errorf("TPOT without decode = %v, want (e2e-ttft)/(n-1) = 0.15", got)
	}
	if got := sel.All[2].TPOT; got != 0 {
		t.Errorf("TPOT of a one-token request = %v, want 0", got)
	}
}

// window builds a histogram window of the given finished count over (0, 60s].
func window(finished float64) slo.Window {
	return slo.Window{Start: t0, End: t0.Add(time.Minute), Nominal: time.Minute, RequestSuccess: finished, HasRequestSuccess: true}
}

// fast judges the finished requests only; TestAbandonedPolicyInExactWindows
// covers the default policy.
var fast = slo.SLO{Name: "fast", Objectives: []slo.Objective{{Metric: slo.E2E, Threshold: 1}}, Goal: 0.9, Abandoned: slo.AbandonedExcluded}

// TestAbandonedPolicyInExactWindows: 2 of 3 finished requests are good.
// Under abandoned: bad the spans' "all" is over finished + abandoned, with
// the histograms' abandoned bound carried into it; without such a bound it
// is not published; under excluded it is exactly 2/3 whatever the bound.
func TestAbandonedPolicyInExactWindows(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Minute)})
	s.Add([]Span{span("a", 10*time.Second, 0.5), span("b", 20*time.Second, 2), span("c", 30*time.Second, 1)})
	sel := s.Select("gpu0", "m", false, t0, t0.Add(time.Minute))
	bad := fast
	bad.Abandoned = slo.AbandonedBad
	judged := func(a slo.Bounded) slo.WindowReport {
		return slo.WindowReport{SLOs: []slo.SLOResult{{Name: "fast", Abandoned: a, HasAbandoned: true}}}
	}
	for _, tc := range []struct {
		name    string
		def     slo.SLO
		hist    slo.WindowReport
		want    slo.Bounded
		present bool
	}{
		{"bad, one to three abandoned", bad, judged(slo.Bounded{Lower: 1, Estimate: 2, Upper: 3}), slo.Bounded{Lower: 2.0 / 6, Estimate: 2.0 / 5, Upper: 2.0 / 4}, true},
		{"bad, none abandoned", bad, judged(slo.Exact(0)), slo.Exact(2.0 / 3), true},
		{"bad, abandoned unknown", bad, slo.WindowReport{}, slo.Bounded{}, false},
		{"excluded", fast, judged(slo.Bounded{Lower: 1, Estimate: 2, Upper: 3}), slo.Exact(2.0 / 3), true},
		// Two requests turned away at admission over the same scrapes: an
		// exact count, added to every side of the population under
		// rejected: bad, left out under excluded.
		{"bad, abandoned and rejected", bad, rejectedToo(judged(slo.Bounded{Lower: 1, Estimate: 2, Upper: 3}), 2), slo.Bounded{Lower: 2.0 / 8, Estimate: 2.0 / 7, Upper: 2.0 / 6}, true},
		{"abandoned excluded, rejected bad", fast, rejectedToo(judged(slo.Bounded{Lower: 1, Estimate: 2, Upper: 3}), 2), slo.Exact(2.0 / 5), true},
		{"rejected excluded", rejectedExcluded(bad), rejectedToo(judged(slo.Exact(0)), 2), slo.Exact(2.0 / 3), true},
	} {
		res := Evaluate(sel, window(3), tc.hist, []slo.SLO{tc.def}, []float64{0.5})
		r := res.Exact.SLOs[0]
		got, ok := r.Objectives[slo.AllKey]
		if ok != tc.present || got != tc.want {
			t.Errorf("%s: all = %+v (present %v), want %+v (present %v)", tc.name, got, ok, tc.want, tc.present)
		}
		if r.HasBurnRate != tc.present {
			t.Errorf("%s: burn rate present %v, want %v", tc.name, r.HasBurnRate, tc.present)
		}
		if g := r.GoodRequests[slo.AllKey]; g != slo.Exact(2) {
			t.Errorf("%s: good requests %+v, want exactly 2 whatever the policy", tc.name, g)
		}
		wr := tc.hist
		res.Apply(&wr)
		if !tc.present {
			continue
		}
		if all, ok := wr.SLOs[0].Objectives[slo.AllKey]; !ok || all != tc.want || !wr.SLOs[0].HasAbandoned {
			t.Errorf("%s: applied all %+v (abandoned present %v), want %+v", tc.name, all, wr.SLOs[0].HasAbandoned, tc.want)
		}
	}
}

// TestPartialCoverageIsNeverExact: fewer spans than finished requests (lost
// or sampled), or more (spans of another interval), leave the window to the
// histograms; equal counts publish exact numbers.
func TestPartialCoverageIsNeverExact(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Minute)})
	s.Add([]Span{span("a", 10*time.Second, 0.5), span("b", 20*time.Second, 2), span("c", 30*time.Second, 1)})
	sel := s.Select("gpu0", "m", false, t0, t0.Add(time.Minute))
	for _, finished := range []float64{4, 2} {
		res := Evaluate(sel, window(finished), slo.WindowReport{}, []slo.SLO{fast}, []float64{0.5})
		if res.Covered || len(res.Adapters) != 0 || res.Exact.Requests != 0 {
			t.Errorf("finished %v, spans 3: covered %v, exact %+v", finished, res.Covered, res.Exact)
		}
		wr := slo.WindowReport{Quantiles: map[slo.Metric][]slo.Quantile{slo.E2E: {{Q: 0.5, Bounded: slo.Bounded{Estimate: 1, Lower: 0.5, Upper: 2}}}}}
		res.Apply(&wr)
		if wr.Quantiles[slo.E2E][0].IsExact() {
			t.Error("Apply of an uncovered result replaced the histogram bracket")
		}
	}
	res := Evaluate(sel, window(3), slo.WindowReport{}, []slo.SLO{fast}, []float64{0.5})
	if !res.Covered {
		t.Fatal("3 spans for 3 finished requests: not covered")
	}
	if got := res.Exact.Quantiles[slo.E2E][0]; got.Estimate != 1 || !got.IsExact() {
		t.Errorf("exact e2e median = %+v, want 1", got)
	}
	if got := res.Exact.SLOs[0].Objectives[slo.AllKey]; got != slo.Exact(2.0/3) {
		t.Errorf("attainment = %+v, want exactly 2/3", got)
	}
}

// TestCalibrationFlagsABrokenBound: a histogram bound that excludes the
// exact value is reported, without tolerance.
func TestCalibrationFlagsABrokenBound(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Minute)})
	s.Add([]Span{span("a", 10*time.Second, 0.5), span("b", 20*time.Second, 2)})
	sel := s.Select("gpu0", "m", false, t0, t0.Add(time.Minute))
	hist := slo.WindowReport{
		Quantiles: map[slo.Metric][]slo.Quantile{slo.E2E: {{Q: 0.5, Bounded: slo.Bounded{Estimate: 0.6, Lower: 0.5, Upper: 0.7}}, {Q: 0.99, Bounded: slo.Bounded{Estimate: 1.5, Lower: 1, Upper: 1.9}}}},
	}
	res := Evaluate(sel, window(2), hist, nil, []float64{0.5, 0.99})
	c := res.Calibration
	if c.Checked != 2 || len(c.Failures) != 1 || c.Held() {
		t.Fatalf("calibration = %+v, want the p99 bracket [1, 1.9] to fail against 2", c)
	}
	if len(c.QuantileErrors) != 2 || c.QuantileErrors[0].Error != hist.Quantiles[slo.E2E][0].Estimate-0.5 {
		t.Errorf("quantile errors = %+v", c.QuantileErrors)
	}
}

// TestSpansContradictingHistogramsAreNotExact: spans that number the finished
// requests but lie outside the histograms' proved bounds (TTFT 3s, e2e 5s
// where the histograms prove every e2e is at most 1s) are inconsistent: the
// window is not covered, no exact number or adapter is published, Apply
// leaves the histograms' bounds, and the calibration says which bound failed.
func TestSpansContradictingHistogramsAreNotExact(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Minute)})
	s.Add([]Span{span("a", 10*time.Second, 5), span("b", 20*time.Second, 5)})
	sel := s.Select("gpu0", "m", false, t0, t0.Add(time.Minute))
	e2e := slo.Bounded{Estimate: 0.75, Lower: 0.5, Upper: 1}
	hist := slo.WindowReport{
		Quantiles: map[slo.Metric][]slo.Quantile{slo.E2E: {{Q: 0.99, Bounded: e2e}}},
		SLOs:      []slo.SLOResult{{Name: fast.Name, Objectives: map[string]slo.Bounded{string(slo.E2E): slo.Exact(1), slo.AllKey: slo.Exact(1)}}},
	}
	res := Evaluate(sel, window(2), hist, []slo.SLO{fast}, []float64{0.99})
	if res.Covered || !res.Inconsistent {
		t.Fatalf("covered %v, inconsistent %v: want an inconsistent window, not covered", res.Covered, res.Inconsistent)
	}
	if res.Calibration.Held() || len(res.Calibration.Failures) == 0 {
		t.Errorf("calibration %+v: want the failed bounds named", res.Calibration)
	}
	if res.Exact.Requests != 0 || len(res.Adapters) != 0 {
		t.Errorf("exact numbers published for an inconsistent window: %+v, %d adapters", res.Exact, len(res.Adapters))
	}
	wr := hist
	res.Apply(&wr)
	if got := wr.Quantiles[slo.E2E][0].Bounded; got != e2e {
		t.Errorf("Apply replaced the histograms' e2e p99 %+v with %+v", e2e, got)
	}
}

// rejectedToo adds n requests rejected at admission to a histogram
// evaluation's only SLO, as the ledger's window reports them.
func rejectedToo(wr slo.WindowReport, n float64) slo.WindowReport {
	wr.SLOs[0].Rejected, wr.SLOs[0].HasRejected = n, true
	return wr
}

func rejectedExcluded(s slo.SLO) slo.SLO {
	s.Rejected = slo.RejectedExcluded
	return s
}
