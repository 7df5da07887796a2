package bench

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/rules"
)

// TestFleetWalk checks the synthetic fleet's shape: every series of Series
// gets one sample per scrape in time order, counters never fall, each
// histogram's buckets are cumulative (+Inf equal to the count), and the
// ledger's finished requests per model add up to the change of its
// servers' e2e counts.
func TestFleetWalk(t *testing.T) {
	f := Fleet{Targets: 3, Models: 2, History: 10 * time.Minute, End: Epoch.Add(time.Hour), Rate: 2, Seed: 1}
	series := f.Series()
	last := make([]FleetSample, len(series))
	seen := make([]int, len(series))
	finished := map[string]float64{}
	e2eFirst, e2eLast := map[int]float64{}, map[int]float64{}
	err := f.Walk(func(s FleetSample) error {
		ls := series[s.Series]
		if seen[s.Series] > 0 {
			if s.T-last[s.Series].T != Interval.Milliseconds() {
				t.Fatalf("%s: samples %d ms apart", ls, s.T-last[s.Series].T)
			}
			if ls.Get("model_name") != "" && ls.Get("instance") != "" && !isGauge(ls.Get("__name__")) && s.V < last[s.Series].V {
				t.Fatalf("%s: counter fell from %v to %v", ls, last[s.Series].V, s.V)
			}
		}
		switch name := ls.Get("__name__"); {
		case name == "model_name:vllm_slo_finished_requests:interval_increase":
			finished[ls.Get("model_name")] += s.V
		case name == "vllm:e2e_request_latency_seconds_count":
			if _, ok := e2eFirst[s.Series]; !ok {
				e2eFirst[s.Series] = s.V
			}
			e2eLast[s.Series] = s.V
		}
		last[s.Series] = s
		seen[s.Series]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range seen {
		if n != f.Steps() {
			t.Fatalf("%s: %d samples, want %d", series[i], n, f.Steps())
		}
	}
	checkCumulative(t, series, last)
	byModel := map[string]float64{}
	for i := range e2eLast {
		byModel[series[i].Get("model_name")] += e2eLast[i] - e2eFirst[i]
	}
	for m, n := range byModel {
		if finished[m] != n {
			t.Errorf("model %s: ledger finished %v, servers' e2e count grew %v", m, finished[m], n)
		}
	}
	if len(byModel) != 2 {
		t.Errorf("servers serve %d models, want 2", len(byModel))
	}
}

// checkCumulative checks, on the last scrape, that every histogram's
// buckets grow with le and that +Inf equals the count.
func checkCumulative(t *testing.T, series []labels.Labels, last []FleetSample) {
	t.Helper()
	buckets := map[string][]float64{} // instance/family → values in le order
	counts := map[string]float64{}
	for i, ls := range series {
		name := ls.Get("__name__")
		key := ls.Get("instance") + "/" + strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count")
		switch {
		case strings.HasSuffix(name, "_bucket"):
			buckets[key] = append(buckets[key], last[i].V)
		case strings.HasSuffix(name, "_count"):
			counts[key] = last[i].V
		}
	}
	for key, vs := range buckets {
		for j := 1; j < len(vs); j++ {
			if vs[j] < vs[j-1] {
				t.Errorf("%s: bucket %d holds %v, below the one before (%v)", key, j, vs[j], vs[j-1])
			}
		}
		if vs[len(vs)-1] != counts[key] || counts[key] == 0 {
			t.Errorf("%s: +Inf %v, count %v", key, vs[len(vs)-1], counts[key])
		}
	}
}

func isGauge(name string) bool {
	return name == "vllm:num_requests_running" || name == "vllm:num_requests_waiting"
}

// TestFleetLevels checks the level series against their definition: each
// the sum of the ledger series over its span ending at the sample, from the
// history's start (nothing before it), for every series and step.
func TestFleetLevels(t *testing.T) {
	f := Fleet{Targets: 3, Models: 2, History: 30 * time.Minute, End: Epoch.Add(time.Hour), Rate: 2, Seed: 1,
		Levels: []time.Duration{time.Minute, 5 * time.Minute, 20 * time.Minute}}
	series := f.Series()
	values := map[string][]float64{} // series text without the level → values by step
	levels := map[string]map[time.Duration][]float64{}
	err := f.Walk(func(s FleetSample) error {
		ls := series[s.Series]
		name := ls.Get("__name__")
		if !strings.HasPrefix(name, "model_name:") {
			return nil
		}
		for _, l := range f.Levels {
			if base, ok := strings.CutSuffix(name, rules.LevelRecord("", l)); ok {
				key := base + ls.Get("model_name") + ls.Get("objective")
				if levels[key] == nil {
					levels[key] = map[time.Duration][]float64{}
				}
				levels[key][l] = append(levels[key][l], s.V)
				return nil
			}
		}
		key := name + ls.Get("model_name") + ls.Get("objective")
		values[key] = append(values[key], s.V)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(values) != f.Models*len(LedgerSeries) || len(levels) != len(values) {
		t.Fatalf("%d ledger series and %d with levels, want %d", len(values), len(levels), f.Models*len(LedgerSeries))
	}
	nonzero := 0
	for key, vs := range values {
		for _, l := range f.Levels {
			span := int(l / Interval)
			got := levels[key][l]
			if len(got) != len(vs) {
				t.Fatalf("%s %v: %d samples, want %d", key, l, len(got), len(vs))
			}
			for step := range vs {
				want := 0.0
				for k := max(0, step-span+1); k <= step; k++ {
					want += vs[k]
				}
				if got[step] != want {
					t.Fatalf("%s %v at step %d: %v, want %v", key, l, step, got[step], want)
				}
				if want != 0 {
					nonzero++
				}
			}
		}
	}
	if nonzero == 0 {
		t.Fatal("every level value is 0: nothing was checked")
	}
}

// TestFleetSparseHistory checks the 30-day shape: within Full of End every
// series has every scrape; before it only the gauges and the level series
// that a SparseRead names have samples, and only within its lookback and
// Band around End − its offset; every value equals the full history's.
func TestFleetSparseHistory(t *testing.T) {
	levels := rules.DefaultOptions().Levels
	full := Fleet{Targets: 1, Models: 1, History: 31 * 24 * time.Hour, End: Epoch.Add(40 * 24 * time.Hour), Rate: 0.2, Seed: 1, Levels: levels}
	sparse := full
	sparse.Full, sparse.Band = 75*time.Minute, 10*time.Minute
	series := full.Series()
	end := full.End.UnixMilli()
	// read reports whether a SparseRead of level (0: the gauges) covers ms.
	read := func(level time.Duration, ms int64) bool {
		for _, r := range SparseReads {
			at := end - r.Offset.Milliseconds()
			if r.Level == level && ms >= at-sparseLookback.Milliseconds() && ms <= at+sparse.Band.Milliseconds() {
				return true
			}
		}
		return false
	}
	anyRead := func(ms int64) bool {
		for _, l := range append([]time.Duration{0}, levels...) {
			if read(l, ms) {
				return true
			}
		}
		return false
	}
	// The full history's samples the sparse one may hold before Full.
	want := map[[2]int64]float64{}
	if err := full.Walk(func(s FleetSample) error {
		if s.T <= end-sparse.Full.Milliseconds() && anyRead(s.T) {
			want[[2]int64{int64(s.Series), s.T}] = s.V
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	err := sparse.Walk(func(s FleetSample) error {
		ls := series[s.Series]
		if s.T > end-sparse.Full.Milliseconds() {
			counts["full"]++
			return nil
		}
		name := ls.Get("__name__")
		var level time.Duration = -1
		if isGauge(name) {
			level = 0
		}
		for _, l := range levels {
			if strings.HasSuffix(name, "_sum"+model.Duration(l).String()) {
				level = l
			}
		}
		if level < 0 || !read(level, s.T) {
			t.Fatalf("%s at %d: a sample no sparse read covers", ls, s.T)
		}
		if v, ok := want[[2]int64{int64(s.Series), s.T}]; !ok || v != s.V {
			t.Fatalf("%s at %d: %v, the full history has %v (%v)", ls, s.T, s.V, v, ok)
		}
		counts[name]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(series) * int(sparse.Full/Interval); counts["full"] != want {
		t.Errorf("%d samples in the full part, want %d", counts["full"], want)
	}
	for _, name := range []string{"vllm:num_requests_running", LedgerSeries[0].Name + "_sum1h", LedgerSeries[0].Name + "_sum6h",
		LedgerSeries[0].Name + "_sum1d", LedgerSeries[0].Name + "_sum1w"} {
		if counts[name] == 0 {
			t.Errorf("no sample of %s before the full part", name)
		}
	}
	if n := counts["vllm:e2e_request_latency_seconds_count"] + counts[LedgerSeries[0].Name] + counts[LedgerSeries[0].Name+"_sum5m"]; n != 0 {
		t.Errorf("%d samples of series no rule reads there", n)
	}
}

// TestWriteImportLive checks the live split against WriteImport: the
// history and the scrape bodies, concatenated, are its text; the history
// holds no sample after End and is closed once; each scrape holds one
// scrape time after End, the times in order Interval apart, every series
// once each.
func TestWriteImportLive(t *testing.T) {
	f := Fleet{Targets: 3, Models: 2, History: 10 * time.Minute, End: Epoch.Add(time.Hour), Rate: 2, Seed: 1, Ahead: 2 * time.Minute}
	var whole strings.Builder
	total, err := f.WriteImport(&whole)
	if err != nil {
		t.Fatal(err)
	}
	hist := &closeCounter{}
	var scrapes strings.Builder
	var times []time.Time
	n, err := f.WriteImportLive(LiveImport{History: hist, Scrape: func(at time.Time, body []byte) error {
		if hist.closed != 1 {
			t.Fatalf("scrape at %s before the history was closed", at)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
			if ts := line[strings.LastIndexByte(line, ' ')+1:]; ts != strconv.FormatInt(at.UnixMilli(), 10) {
				t.Fatalf("scrape at %d holds a sample at %s", at.UnixMilli(), ts)
			}
		}
		if got, want := strings.Count(string(body), "\n"), len(f.Series()); got != want {
			t.Fatalf("scrape at %s: %d samples, want one per series (%d)", at, got, want)
		}
		times = append(times, at)
		scrapes.Write(body)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if hist.closed != 1 {
		t.Fatalf("history closed %d times, want 1", hist.closed)
	}
	if got := hist.String() + scrapes.String(); got != whole.String() {
		t.Fatal("history + scrapes differ from WriteImport's text")
	}
	if want := f.Steps(); n != want*len(f.Series()) || total != n+len(times)*len(f.Series()) {
		t.Fatalf("history %d samples, whole %d, %d scrapes of %d series; want %d history steps", n, total, len(times), len(f.Series()), want)
	}
	if len(times) != int(f.Ahead/Interval) {
		t.Fatalf("%d scrapes after End, want %d", len(times), f.Ahead/Interval)
	}
	for i, at := range times {
		if want := f.End.Add(time.Duration(i+1) * Interval); !at.Equal(want) {
			t.Fatalf("scrape %d at %s, want %s", i, at, want)
		}
	}
}

// closeCounter is a strings.Builder that counts its Close calls.
type closeCounter struct {
	strings.Builder
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestFleetPhased checks the phased fleet against the aligned one: the
// same samples, each server's moved by its own phase (distinct, under one
// interval), the records at the step's time, and times that never go
// down along the walk; and the live import of the phased fleet: one body
// per distinct time, in time order, together WriteImport's text.
func TestFleetPhased(t *testing.T) {
	aligned := Fleet{Targets: 4, Models: 2, History: 5 * time.Minute, End: Epoch.Add(time.Hour), Rate: 2, Seed: 1, Ahead: time.Minute}
	phased := aligned
	phased.Phased = true
	series := aligned.Series()
	want := map[[2]int64]float64{} // series, time → value
	if err := aligned.Walk(func(s FleetSample) error {
		if inst := series[s.Series].Get("instance"); inst != "" {
			s.T += phased.Phase(targetOf(t, inst)).Milliseconds()
		}
		want[[2]int64{int64(s.Series), s.T}] = s.V
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var last int64
	n := 0
	if err := phased.Walk(func(s FleetSample) error {
		if s.T < last {
			t.Fatalf("%s at %d after a sample at %d", series[s.Series], s.T, last)
		}
		last = s.T
		v, ok := want[[2]int64{int64(s.Series), s.T}]
		if !ok || v != s.V {
			t.Fatalf("%s at %d = %v; the aligned fleet moved by its phase has %v (%v)", series[s.Series], s.T, s.V, v, ok)
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Fatalf("%d samples phased, %d aligned", n, len(want))
	}
	seen := map[time.Duration]bool{}
	for i := range phased.Targets {
		p := phased.Phase(i)
		if p < 0 || p >= Interval || seen[p] || aligned.Phase(i) != 0 {
			t.Fatalf("target %d: phase %s (aligned %s); phases so far %v", i, p, aligned.Phase(i), seen)
		}
		seen[p] = true
	}
	checkLiveBodies(t, phased)
}

// targetOf is the index of the target whose instance label is inst
// ("t<index>", Series).
func targetOf(t *testing.T, inst string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(inst, "t"))
	if err != nil {
		t.Fatalf("instance %q: %v", inst, err)
	}
	return n
}

// checkLiveBodies checks f's live import: every body's samples at its
// time, the bodies in increasing time, history + bodies = WriteImport.
func checkLiveBodies(t *testing.T, f Fleet) {
	t.Helper()
	var whole, bodies strings.Builder
	if _, err := f.WriteImport(&whole); err != nil {
		t.Fatal(err)
	}
	hist := &closeCounter{}
	var prev time.Time
	_, err := f.WriteImportLive(LiveImport{History: hist, Scrape: func(at time.Time, body []byte) error {
		if !at.After(prev) {
			t.Fatalf("a body at %s after one at %s", at, prev)
		}
		prev = at
		for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
			if ts := line[strings.LastIndexByte(line, ' ')+1:]; ts != strconv.FormatInt(at.UnixMilli(), 10) {
				t.Fatalf("body at %d holds a sample at %s", at.UnixMilli(), ts)
			}
		}
		bodies.Write(body)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if hist.String()+bodies.String() != whole.String() {
		t.Fatal("history + bodies differ from WriteImport's text")
	}
}
