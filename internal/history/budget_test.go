package history

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// hostile produces the patterns a broken or hostile target can send, one
// snapshot per call.
type hostile struct {
	name   string
	models int
	next   func(n int, t time.Time) map[string]*scrape.ModelSample
}

// oneModel wraps a sample for model "m".
func oneModel(ms *scrape.ModelSample) map[string]*scrape.ModelSample {
	return map[string]*scrape.ModelSample{"m": ms}
}

// counterSample is a model with one counter and one small histogram.
func counterSample(count float64, edges []float64) *scrape.ModelSample {
	counts := make([]float64, len(edges))
	for i := range counts {
		counts[i] = count
	}
	return &scrape.ModelSample{
		Histograms: map[scrape.Family]slo.Histogram{scrape.TTFT: {Edges: edges, Counts: counts, Sum: count}},
		Counters:   map[scrape.Family]float64{scrape.GenerationTokens: count},
		Gauges:     map[scrape.Family]float64{scrape.Running: 1, scrape.Waiting: 0},
	}
}

// manyEdges returns n ascending edges ending in +Inf.
func manyEdges(n int, scale float64) []float64 {
	e := make([]float64, n)
	for i := range e {
		e[i] = scale * float64(i+1)
	}
	e[n-1] = math.Inf(1)
	return e
}

var hostilePatterns = []hostile{
	{
		// A counter that resets on every scrape: a segment per scrape, and
		// every segment's last point is kept for the whole retention.
		name: "reset every scrape", models: 1,
		next: func(n int, _ time.Time) map[string]*scrape.ModelSample {
			return oneModel(counterSample(float64(1+n%2), edges3))
		},
	},
	{
		// The bucket layout changes on every scrape.
		name: "layout change every scrape", models: 1,
		next: func(n int, _ time.Time) map[string]*scrape.ModelSample {
			return oneModel(counterSample(float64(n), manyEdges(3+n%2, 0.1)))
		},
	},
	{
		// 50,001 buckets in one histogram.
		name: "50k buckets", models: 1,
		next: func(n int, _ time.Time) map[string]*scrape.ModelSample {
			return oneModel(counterSample(float64(n), manyEdges(50_001, 0.001)))
		},
	},
	{
		// As many models as the per-target cap lets through, each resetting.
		name: "100 models resetting", models: 100,
		next: func(n int, _ time.Time) map[string]*scrape.ModelSample {
			out := map[string]*scrape.ModelSample{}
			for m := range 100 {
				out[fmt.Sprint("model-", m)] = counterSample(float64(1+(n+m)%2), edges3)
			}
			return out
		},
	},
}

// TestMemoryLimitHolds runs each hostile pattern through a 30-day retention
// with a memory limit and checks, after every scrape, that the running
// estimate is within the limit, that it equals a recount from scratch, and
// that an independent walk of the held memory stays within the limit plus
// the slice headroom the estimate leaves out. The cheap patterns run seven
// simulated days of 15 s scrapes; the 50k-bucket one an hour (it reaches the
// limit within a minute) and the 100 models six hours (within an hour).
func TestMemoryLimitHolds(t *testing.T) {
	const limit = 4 << 20
	for _, hp := range hostilePatterns {
		t.Run(hp.name, func(t *testing.T) {
			span := 7 * 24 * time.Hour
			switch {
			case hp.name == "50k buckets" || testing.Short():
				span = time.Hour
			case hp.models > 1:
				span = 6 * time.Hour // 100 models: the limit binds within the first hour
			}
			r := NewRetention(time.Hour, 30*24*time.Hour)
			r.MaxBytes = limit
			h := New(r)
			n := 0
			for tt := t0; tt.Before(t0.Add(span)); tt = tt.Add(15 * time.Second) {
				if err := h.Append(&scrape.Snapshot{Time: tt, Models: hp.next(n, tt)}); err != nil {
					t.Fatalf("scrape %d: %v", n, err)
				}
				n++
				u := h.Usage()
				if u.Bytes > limit && h.Len() > minPointsKept*hp.models {
					t.Fatalf("scrape %d: %d bytes held, limit %d", n, u.Bytes, limit)
				}
				if n%997 == 0 {
					checkRecount(t, h)
				}
			}
			checkRecount(t, h)
			u := h.Usage()
			if walked := int64(heldBytes(h)); walked > limit+int64(h.Len())*pointHeaderBytes {
				t.Errorf("walked %d bytes, limit %d plus headroom %d", walked, limit, int64(h.Len())*pointHeaderBytes)
			}
			if u.DroppedPoints == 0 {
				t.Errorf("nothing dropped: the pattern never reached the limit (%d bytes)", u.Bytes)
			}
			if w, ok := h.Window(h.Models()[0], h.Newest(), 30*24*time.Hour, Options{}); ok && w.Start.UnixNano() < u.TruncatedBefore {
				t.Errorf("window starts at %v, before the truncation at %v", w.Start, fromNanos(u.TruncatedBefore))
			}
			t.Logf("%d scrapes: %d points, %d KiB estimated, %d KiB walked, %d dropped", n, h.Len(), u.Bytes>>10, heldBytes(h)>>10, u.DroppedPoints)
		})
	}
}

// checkRecount compares each model's running estimate with a recount.
func checkRecount(t *testing.T, h *History) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	total := h.bytes
	for name, sr := range h.models {
		running := sr.bytes
		sr.recount()
		if sr.bytes != running {
			t.Fatalf("model %q: running estimate %d, recount %d", name, running, sr.bytes)
		}
	}
	h.recountAll()
	if h.bytes != total {
		t.Fatalf("running total %d, recount %d", total, h.bytes)
	}
}

// TestMemoryLimitKeepsRecentWindowsExact checks that a limit only shortens
// how far back windows reach: recent windows equal those of an unlimited
// history fed the same scrapes, and the longest one starts at the oldest
// point held.
func TestMemoryLimitKeepsRecentWindowsExact(t *testing.T) {
	r := NewRetention(time.Hour, 30*24*time.Hour)
	free := New(r)
	r.MaxBytes = 256 << 10
	capped := New(r)
	g := newSynthetic(4, 500)
	var end time.Time
	for i := range 3000 {
		end = at(float64(15 * i))
		s := g.next(end)
		for _, h := range []*History{free, capped} {
			if err := h.Append(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if capped.Usage().DroppedPoints == 0 {
		t.Fatal("the limit dropped nothing; make the test data larger")
	}
	for _, length := range []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute} {
		got, ok1 := capped.Window("m", end, length, Options{})
		want, ok2 := free.Window("m", end, length, Options{})
		if !ok1 || !ok2 || !got.Start.Equal(want.Start) || got.Latency[slo.TTFT].Total() != want.Latency[slo.TTFT].Total() {
			t.Errorf("%v window: capped %v from %v, free %v from %v", length, got.Latency[slo.TTFT].Total(), got.Start, want.Latency[slo.TTFT].Total(), want.Start)
		}
	}
	long, ok := capped.Window("m", end, 24*time.Hour, Options{})
	if !ok || !long.Start.Equal(capped.Oldest()) {
		t.Errorf("day window starts at %v, oldest point %v", long.Start, capped.Oldest())
	}
}
