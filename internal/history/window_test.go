package history

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// step is one scrape of model "m" at t0+sec.
type step struct {
	sec float64
	s   sample
}

func build(t *testing.T, r Retention, steps []step) *History {
	t.Helper()
	h := New(r)
	for _, st := range steps {
		if err := h.Append(snap(at(st.sec), "m", st.s)); err != nil {
			t.Fatalf("append at %vs: %v", st.sec, err)
		}
	}
	return h
}

func TestWindowIncreases(t *testing.T) {
	edges5 := []float64{0.1, 0.25, 0.5, 1, inf}
	cases := []struct {
		name   string
		steps  []step
		end    float64 // seconds after t0
		length time.Duration
		opts   Options
		wantOK bool
		start  float64 // expected Start, seconds after t0
		ttft   slo.Histogram
		gen    float64
		req    float64
		resets int
	}{
		{
			name: "within one segment",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10, req: 3}},
				{15, sample{ttft: hist(edges3, 2, 2, 4, 5), gen: 30, req: 5}},
				{30, sample{ttft: hist(edges3, 4, 4, 7, 9), gen: 70, req: 9}},
				{45, sample{ttft: hist(edges3, 5, 5, 9, 12), gen: 90, req: 12}},
			},
			end: 45, length: 30 * time.Second, wantOK: true, start: 15,
			ttft: hist(edges3, 3, 3, 5, 7), gen: 60, req: 7,
		},
		{
			name: "end between scrapes snaps to the scrape before",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10}},
				{15, sample{ttft: hist(edges3, 2, 2, 4, 5), gen: 30}},
				{30, sample{ttft: hist(edges3, 4, 4, 7, 9), gen: 70}},
			},
			end: 40, length: 20 * time.Second, wantOK: true, start: 15,
			ttft: hist(edges3, 2, 2, 3, 4), gen: 40,
		},
		{
			name: "counter reset mid-window counts from zero",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10}},
				{15, sample{ttft: hist(edges3, 3, 3, 5, 8), gen: 20}},
				{30, sample{ttft: hist(edges3, 1, 1, 1, 2), gen: 5}},
				{45, sample{ttft: hist(edges3, 2, 2, 3, 4), gen: 8}},
			},
			end: 45, length: time.Minute, wantOK: true, start: 0,
			ttft: hist(edges3, 4, 4, 6, 9), gen: 18, resets: 1,
		},
		{
			name: "only the generation counter drops: whole model restarts",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 100}},
				{15, sample{ttft: hist(edges3, 2, 2, 2, 2), gen: 7}},
			},
			end: 15, length: time.Minute, wantOK: true, start: 0,
			ttft: hist(edges3, 2, 2, 2, 2), gen: 7, resets: 1,
		},
		{
			name: "new created with counts past the old values",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10, created: 100}},
				{15, sample{ttft: hist(edges3, 2, 2, 3, 4), gen: 20, created: 100}},
				{30, sample{ttft: hist(edges3, 9, 9, 9, 9), gen: 50, created: 200}},
			},
			end: 30, length: time.Minute, wantOK: true, start: 0,
			ttft: hist(edges3, 10, 10, 10, 10), gen: 60, resets: 1,
		},
		{
			name: "created appearing where it was unknown is no restart",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10}},
				{15, sample{ttft: hist(edges3, 2, 2, 3, 4), gen: 20, created: 100}},
				{30, sample{ttft: hist(edges3, 3, 3, 4, 5), gen: 30}},
			},
			end: 30, length: time.Minute, wantOK: true, start: 0,
			ttft: hist(edges3, 2, 2, 2, 2), gen: 20,
		},
		{
			name: "bucket layout change sums on common edges",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10}},
				{15, sample{ttft: hist(edges3, 4, 3, 5, 8), gen: 20}},
				{30, sample{ttft: hist(edges5, 2, 1, 2, 3, 4, 6), gen: 30}},
				{45, sample{ttft: hist(edges5, 5, 2, 4, 6, 8, 10), gen: 40}},
			},
			end: 45, length: time.Minute, wantOK: true, start: 0,
			ttft: hist(edges3, 3+5, 2+2, 3+6, 5+10), gen: 10 + 40, resets: 1,
		},
		{
			name: "layout change before the window is not coarsening it",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10}},
				{15, sample{ttft: hist(edges5, 2, 1, 2, 3, 4, 6), gen: 30}},
				{30, sample{ttft: hist(edges5, 5, 2, 4, 6, 8, 10), gen: 40}},
			},
			end: 30, length: 15 * time.Second, wantOK: true, start: 15,
			ttft: hist(edges5, 3, 1, 2, 3, 4, 4), gen: 10,
		},
		{
			// Nothing decreased on the edges both layouts share: the same
			// process renders other buckets. The window continues from the
			// old values on the shared edges instead of counting the whole
			// past again, and no restart is counted.
			name: "layout change without a decrease continues the counts",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10}},
				{15, sample{ttft: hist(edges5, 2, 1, 2, 3, 4, 6), gen: 30}},
				{30, sample{ttft: hist(edges5, 5, 2, 4, 6, 8, 10), gen: 40}},
			},
			end: 30, length: time.Minute, wantOK: true, start: 0,
			ttft: hist(edges3, 4, 2-1, 6-2, 10-3), gen: 30,
		},
		{
			name: "layout change every scrape continues the counts",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10}},
				{15, sample{ttft: hist(edges5, 2, 1, 2, 3, 4, 6), gen: 30}},
				{30, sample{ttft: hist(edges3, 5, 4, 8, 10), gen: 40}},
				{45, sample{ttft: hist(edges5, 6, 5, 7, 9, 11, 12), gen: 45}},
			},
			end: 45, length: time.Minute, wantOK: true, start: 0,
			ttft: hist(edges3, 5, 5-1, 9-2, 12-3), gen: 35,
		},
		{
			name: "window longer than history starts at the oldest point",
			steps: []step{
				{100, sample{ttft: hist(edges3, 1, 1, 2, 3), gen: 10}},
				{115, sample{ttft: hist(edges3, 2, 2, 4, 5), gen: 30}},
			},
			end: 115, length: time.Hour, wantOK: true, start: 100,
			ttft: hist(edges3, 1, 1, 2, 2), gen: 20,
		},
		{
			name: "warm-up from created skips early observations of the new process",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 10, created: 1}},
				{15, sample{ttft: hist(edges3, 2, 2, 2, 2), gen: 20, created: 1}},
				{30, sample{ttft: hist(edges3, 3, 3, 3, 3), gen: 5, created: float64(at(25).Unix())}},
				{45, sample{ttft: hist(edges3, 5, 5, 5, 5), gen: 15, created: float64(at(25).Unix())}},
				{60, sample{ttft: hist(edges3, 6, 6, 6, 6), gen: 30, created: float64(at(25).Unix())}},
			},
			end: 60, length: time.Minute, opts: Options{Warmup: 20 * time.Second}, wantOK: true, start: 0,
			// old segment 0→15: +1, +10; new segment from 45 (>= 25+20): +1, +15
			ttft: hist(edges3, 2, 2, 2, 2), gen: 25, resets: 1,
		},
		{
			name: "warm-up without created starts at the restart's first scrape",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 10}},
				{15, sample{ttft: hist(edges3, 2, 2, 2, 2), gen: 20}},
				{30, sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 5}},
				{45, sample{ttft: hist(edges3, 3, 3, 3, 3), gen: 15}},
				{60, sample{ttft: hist(edges3, 6, 6, 6, 6), gen: 30}},
			},
			end: 60, length: time.Minute, opts: Options{Warmup: 20 * time.Second}, wantOK: true, start: 0,
			// new segment starts at 30, warm-up ends at 50: counted from 60, nothing
			ttft: hist(edges3, 1, 1, 1, 1), gen: 10, resets: 1,
		},
		{
			name: "warm-up ignores the first segment when its start is unknown",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 10}},
				{15, sample{ttft: hist(edges3, 2, 2, 2, 2), gen: 20}},
			},
			end: 15, length: time.Minute, opts: Options{Warmup: time.Hour}, wantOK: true, start: 0,
			ttft: hist(edges3, 1, 1, 1, 1), gen: 10,
		},
		{
			name: "warm-up of the first segment from created",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 10, created: float64(at(-10).Unix())}},
				{15, sample{ttft: hist(edges3, 2, 2, 2, 2), gen: 20, created: float64(at(-10).Unix())}},
				{30, sample{ttft: hist(edges3, 4, 4, 4, 4), gen: 40, created: float64(at(-10).Unix())}},
			},
			end: 30, length: time.Minute, opts: Options{Warmup: 20 * time.Second}, wantOK: true, start: 0,
			// warm-up ends at 10: counted from the scrape at 15
			ttft: hist(edges3, 2, 2, 2, 2), gen: 20,
		},
		{
			name: "window inside warm-up is empty but present",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 1, 1), gen: 10, created: float64(at(0).Unix())}},
				{15, sample{ttft: hist(edges3, 2, 2, 2, 2), gen: 20, created: float64(at(0).Unix())}},
			},
			end: 15, length: time.Minute, opts: Options{Warmup: time.Minute}, wantOK: true, start: 0,
			ttft: hist(edges3, 0, 0, 0, 0), gen: 0,
		},
		{
			name:  "one point is no window",
			steps: []step{{0, sample{ttft: hist(edges3, 1, 1, 1, 1)}}},
			end:   0, length: time.Minute,
		},
		{
			name: "end before the history",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 1, 1)}},
				{15, sample{ttft: hist(edges3, 2, 2, 2, 2)}},
			},
			end: -5, length: time.Minute,
		},
		{
			name: "zero length",
			steps: []step{
				{0, sample{ttft: hist(edges3, 1, 1, 1, 1)}},
				{15, sample{ttft: hist(edges3, 2, 2, 2, 2)}},
			},
			end: 15, length: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := build(t, keepAll, tc.steps)
			w, ok := h.Window("m", at(tc.end), tc.length, tc.opts)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if h.Resets() != tc.resets || h.ModelResets("m") != tc.resets {
				t.Errorf("resets = %d/%d, want %d", h.Resets(), h.ModelResets("m"), tc.resets)
			}
			if !ok {
				return
			}
			if !w.Start.Equal(at(tc.start)) {
				t.Errorf("Start = %v, want %v", w.Start, at(tc.start))
			}
			if w.Nominal != tc.length {
				t.Errorf("Nominal = %v, want %v", w.Nominal, tc.length)
			}
			if got := w.Latency[slo.TTFT]; !reflect.DeepEqual(got, tc.ttft) {
				t.Errorf("TTFT = %+v, want %+v", got, tc.ttft)
			}
			if len(w.Latency) != 1 {
				t.Errorf("Latency has %d families, want only TTFT: %v", len(w.Latency), w.Latency)
			}
			if !w.HasTokenCounters || w.GenerationTokensTotal != tc.gen {
				t.Errorf("generation tokens = %v (has %v), want %v", w.GenerationTokensTotal, w.HasTokenCounters, tc.gen)
			}
			if !w.HasRequestSuccess || w.RequestSuccess != tc.req {
				t.Errorf("request success = %v (has %v), want %v", w.RequestSuccess, w.HasRequestSuccess, tc.req)
			}
			if w.PromptTokens.Valid() || w.GenerationTokens.Valid() {
				t.Errorf("token histograms present though never scraped")
			}
		})
	}
}

func TestWindowGauges(t *testing.T) {
	nan := -1.0 // absent
	cases := []struct {
		name    string
		running []float64 // at 0, 10, 30, 40 s
		end     float64
		length  time.Duration
		want    slo.Gauge
	}{
		{"mean holds each sample until the next", []float64{2, 4, 0, 6}, 40, 40 * time.Second,
			slo.Gauge{Known: true, AtStart: 2, AtEnd: 6, Mean: (2*10 + 4*20 + 0*10) / 40.0, Max: 6}},
		{"edges of a shorter window", []float64{2, 4, 0, 6}, 30, 20 * time.Second,
			slo.Gauge{Known: true, AtStart: 4, AtEnd: 0, Mean: 4, Max: 4}},
		{"absent in the middle is left out of the mean", []float64{2, nan, 8, 6}, 40, 40 * time.Second,
			slo.Gauge{Known: true, AtStart: 2, AtEnd: 6, Mean: (2*10 + 8*10) / 20.0, Max: 8}},
		{"absent at an edge is unknown", []float64{nan, 4, 0, 6}, 40, 40 * time.Second, slo.Gauge{}},
	}
	secs := []float64{0, 10, 30, 40}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var steps []step
			for i, v := range tc.running {
				steps = append(steps, step{secs[i], sample{ttft: hist(edges3, 0, 0, 0, 0), running: v, waiting: 1}})
			}
			h := build(t, keepAll, steps)
			w, ok := h.Window("m", at(tc.end), tc.length, Options{})
			if !ok {
				t.Fatal("no window")
			}
			if w.Running != tc.want {
				t.Errorf("Running = %+v, want %+v", w.Running, tc.want)
			}
			if w.Waiting != (slo.Gauge{Known: true, AtStart: 1, AtEnd: 1, Mean: 1, Max: 1}) {
				t.Errorf("Waiting = %+v, want constant 1", w.Waiting)
			}
		})
	}
}

// TestWindowCoarseStart checks that a window reaching into a thinned tier
// snaps to the retained point, says so in Start, and stays exact there
// (increases, gauge mean and the maximum of a dropped spike).
func TestWindowCoarseStart(t *testing.T) {
	coarse := Retention{Tiers: []Tier{{Step: 0, Keep: 2 * time.Minute}, {Step: time.Minute, Keep: time.Hour}}}
	hc, hr := New(coarse), New(keepAll)
	gen := 0.0
	for i := 0; i <= 40; i++ { // every 15s for 10 minutes
		gen += float64(i % 7)
		running := float64(i % 4)
		if i == 13 { // at 195s: dropped from the coarse tier
			running = 50
		}
		s := snap(at(float64(15*i)), "m", sample{ttft: hist(edges3, gen, gen, gen, gen), gen: gen, running: running, waiting: 0})
		for _, h := range []*History{hc, hr} {
			if err := h.Append(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if hc.Len() >= hr.Len() {
		t.Fatalf("coarse history holds %d points, raw %d: nothing thinned", hc.Len(), hr.Len())
	}
	w, ok := hc.Window("m", at(600), 5*time.Minute+7*time.Second, Options{}) // nominal start 292.99s
	if !ok {
		t.Fatal("no window")
	}
	if !w.Start.Equal(at(240)) {
		t.Fatalf("Start = %v, want the retained point at +240s (%v)", w.Start, at(240))
	}
	want, _ := hr.Window("m", at(600), 6*time.Minute, Options{})
	want.Nominal = w.Nominal
	if !reflect.DeepEqual(w, want) {
		t.Errorf("coarse window\n%+v\nwant raw window\n%+v", w, want)
	}
	wide, _ := hc.Window("m", at(600), 10*time.Minute, Options{})
	if wide.Running.Max != 50 {
		t.Errorf("max over a dropped spike = %v, want 50", wide.Running.Max)
	}
	if math.IsNaN(wide.Running.Mean) || wide.Running.Mean > wide.Running.Max {
		t.Errorf("mean %v out of range", wide.Running.Mean)
	}
}

// TestThinnedWindowsExact compares every window of a thinned history with
// the same (Start, End] of a history that keeps everything, over a run with
// restarts and layout changes.
func TestThinnedWindowsExact(t *testing.T) {
	coarse := Retention{Tiers: []Tier{{0, 3 * time.Minute}, {time.Minute, 20 * time.Minute}, {5 * time.Minute, 2 * time.Hour}}}
	hc, hr := New(coarse), New(keepAll)
	g := newSynthetic(3, 37)
	for i := 0; i < 400; i++ {
		s := g.next(at(float64(15 * i)))
		for _, h := range []*History{hc, hr} {
			if err := h.Append(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	end := 15 * 399.0
	checked := 0
	for _, length := range []time.Duration{time.Minute, 7 * time.Minute, 33 * time.Minute, 90 * time.Minute, 3 * time.Hour} {
		for _, back := range []float64{0, 7, 100, 1000} {
			for _, warm := range []time.Duration{0, 2 * time.Minute} {
				w, ok := hc.Window("m", at(end-back), length, Options{Warmup: warm})
				if !ok {
					t.Fatalf("no window of %v ending %vs back", length, back)
				}
				want, _ := hr.Window("m", w.End, w.End.Sub(w.Start), Options{Warmup: warm})
				want.Nominal = length
				if warm == 0 && !reflect.DeepEqual(w, want) {
					t.Errorf("window %v ending %vs back: thinned\n%+v\nraw\n%+v", length, back, w, want)
				}
				// with warm-up the thinned baseline may be later: never more counted
				if got, raw := w.Latency[slo.TTFT].Total(), want.Latency[slo.TTFT].Total(); got > raw {
					t.Errorf("warm-up %v: thinned counts %v > raw %v", warm, got, raw)
				}
				checked++
			}
		}
	}
	if hc.Resets() != hr.Resets() || hc.Resets() < 5 {
		t.Errorf("resets: thinned %d, raw %d, want equal and >= 5", hc.Resets(), hr.Resets())
	}
	t.Logf("checked %d windows; thinned %d points, raw %d", checked, hc.Len(), hr.Len())
}

// TestWindowAfterGap checks that a window is never stretched across a gap in
// the scrapes: after an hour without scrapes, the 1m window ending at the
// second scrape back holds only the last interval, not the whole hour, and a
// window whose start falls inside the gap starts after it.
func TestWindowAfterGap(t *testing.T) {
	h := New(keepAll)
	steps := []float64{0, 15, 30, 3630, 3645}
	for i, sec := range steps {
		c := float64(100 * (i + 1))
		if err := h.Append(snap(at(sec), "m", sample{ttft: hist(edges3, c, c, c, c), gen: c})); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name      string
		end       float64
		length    time.Duration
		maxGap    time.Duration
		wantOK    bool
		wantStart float64
		wantCount float64
	}{
		{"1m after the gap holds one interval", 3645, time.Minute, 45 * time.Second, true, 3630, 100},
		{"without MaxGap the old behaviour spans the gap", 3645, time.Minute, 0, true, 30, 200},
		{"first scrape after the gap has no window", 3630, time.Minute, 45 * time.Second, false, 0, 0},
		{"1h window starting in the gap starts after it", 3645, time.Hour, 45 * time.Second, true, 3630, 100},
		{"2h window reaches the oldest point", 3645, 2 * time.Hour, 45 * time.Second, true, 0, 400},
		{"window inside the healthy part is unchanged", 30, 15 * time.Second, 45 * time.Second, true, 15, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, ok := h.Window("m", at(tc.end), tc.length, Options{MaxGap: tc.maxGap})
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if !w.Start.Equal(at(tc.wantStart)) {
				t.Errorf("Start = %v, want %v", w.Start, at(tc.wantStart))
			}
			if got := w.Latency[slo.TTFT].Total(); got != tc.wantCount {
				t.Errorf("count = %v, want %v", got, tc.wantCount)
			}
		})
	}
}

// TestWindowNotBefore: a window that would start before Options.NotBefore
// (the oldest scrape another part of the window holds) starts at the first
// point at or after it, with its counts from there; Edges names the same
// two scrapes as Window, with or without it.
func TestWindowNotBefore(t *testing.T) {
	h := New(keepAll)
	for i, sec := range []float64{0, 14, 29, 47, 60, 76} { // jittered 15 s scrapes
		c := float64(100 * (i + 1))
		if err := h.Append(snap(at(sec), "m", sample{ttft: hist(edges3, c, c, c, c), gen: c})); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name      string
		notBefore time.Time
		end       float64
		length    time.Duration
		wantOK    bool
		wantStart float64
		wantCount float64
	}{
		{"unset", time.Time{}, 76, time.Minute, true, 14, 400},
		{"at a scrape", at(29), 76, time.Minute, true, 29, 300},
		{"between scrapes", at(30), 76, time.Minute, true, 47, 200},
		{"before the window", at(5), 76, time.Minute, true, 14, 400},
		{"after the window's end scrape", at(77), 76, time.Minute, false, 0, 0},
		{"at the end scrape", at(76), 76, time.Minute, false, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{NotBefore: tc.notBefore}
			w, ok := h.Window("m", at(tc.end), tc.length, opts)
			e, okE := h.Edges("m", at(tc.end), tc.length, opts)
			if ok != tc.wantOK || okE != ok {
				t.Fatalf("ok = %v (edges %v), want %v", ok, okE, tc.wantOK)
			}
			if !ok {
				return
			}
			if !w.Start.Equal(at(tc.wantStart)) || !w.Start.Equal(e.Start) || !w.End.Equal(e.End) {
				t.Errorf("window (%v, %v], edges (%v, %v]; want start %v", w.Start, w.End, e.Start, e.End, at(tc.wantStart))
			}
			if got := w.Latency[slo.TTFT].Total(); got != tc.wantCount {
				t.Errorf("count = %v, want %v", got, tc.wantCount)
			}
		})
	}
}
