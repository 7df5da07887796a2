package history

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// heldBytes estimates the memory a history holds: points, their value
// vectors (capacity) and the segment layouts they share.
func heldBytes(h *History) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	segs := map[*segment]bool{}
	for _, sr := range h.models {
		for _, tier := range sr.tiers {
			n += cap(tier) * int(unsafe.Sizeof(point{}))
			for i := range tier {
				n += 8*cap(tier[i].vals) + cap(tier[i].enc)
				segs[tier[i].seg] = true
			}
		}
	}
	for sg := range segs {
		n += int(unsafe.Sizeof(*sg)) + len(sg.entries)*int(unsafe.Sizeof(entry{})) + 8*cap(sg.base)
		for _, e := range sg.entries {
			n += 8 * len(e.edges)
		}
	}
	return n
}

// fill appends scrapes every interval from start until end.
func fill(tb testing.TB, h *History, g *synthetic, start time.Time, interval, span time.Duration) time.Time {
	tb.Helper()
	t := start
	for end := start.Add(span); t.Before(end); t = t.Add(interval) {
		if err := h.Append(g.next(t)); err != nil {
			tb.Fatal(err)
		}
	}
	return t
}

// TestRetentionBounded fills a 30-day retention with 15s scrapes and
// restarts every ~6h, and checks that the points held stay within what the
// tiers allow (plus one kept segment end per restart) and stay flat once the
// tiers are full.
func TestRetentionBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 30 days of scrapes")
	}
	const day = 24 * time.Hour
	r := NewRetention(5*time.Minute, 30*day)
	h := New(r)
	g := newSynthetic(1, 1441)
	bound := func() int {
		n := 1
		prevKeep := time.Duration(0)
		for i, tier := range r.Tiers {
			step := tier.Step
			if i == 0 {
				step = 15 * time.Second
			}
			n += int((tier.Keep-prevKeep)/step) + 1
			prevKeep = tier.Keep
		}
		return n + h.Resets()
	}
	now := fill(t, h, g, t0, 15*time.Second, 31*day)
	full, fullBytes := h.Len(), heldBytes(h)
	if full > bound() {
		t.Fatalf("after 31 days: %d points, bound %d", full, bound())
	}
	fill(t, h, g, now, 15*time.Second, 2*day)
	if h.Len() > bound() {
		t.Fatalf("after 33 days: %d points, bound %d", h.Len(), bound())
	}
	if d := h.Len() - full; d > 20 || d < -20 {
		t.Errorf("points not flat once full: %d after 31 days, %d after 33", full, h.Len())
	}
	if d := heldBytes(h) - fullBytes; d > fullBytes/4 {
		t.Errorf("bytes not flat once full: %d after 31 days, %d after 33", fullBytes, heldBytes(h))
	}
	if old := h.Newest().Sub(h.Oldest()); old > r.Longest() {
		t.Errorf("oldest point %v old, retention %v", old, r.Longest())
	}
	w, ok := h.Window("m", h.Newest(), 30*day, Options{})
	if !ok || w.End.Sub(w.Start) < 30*day-time.Hour {
		t.Errorf("30-day window spans %v (ok %v)", w.End.Sub(w.Start), ok)
	}
	t.Logf("30d at 15s, 1 histogram: %d points, ~%d KiB held, %d resets", h.Len(), heldBytes(h)>>10, h.Resets())
}

// BenchmarkAppendWindow measures one scrape of a realistic model (10
// histograms of 20 buckets) plus the windows an evaluation asks for, on a
// history holding a day of data.
func BenchmarkAppendWindow(b *testing.B) {
	h := New(NewRetention(time.Hour, 30*24*time.Hour))
	g := newSynthetic(10, 0)
	now := fill(b, h, g, t0, 15*time.Second, 24*time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := h.Append(g.next(now)); err != nil {
			b.Fatal(err)
		}
		for _, w := range []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, time.Hour} {
			if _, ok := h.Window("m", now, w, Options{}); !ok {
				b.Fatal("no window")
			}
		}
		now = now.Add(15 * time.Second)
	}
}

// BenchmarkWindow30d measures the longest window an error budget asks for.
func BenchmarkWindow30d(b *testing.B) {
	h := New(NewRetention(time.Hour, 30*24*time.Hour))
	g := newSynthetic(10, 2000)
	now := fill(b, h, g, t0, time.Minute, 31*24*time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok := h.Window("m", now, 30*24*time.Hour, Options{Warmup: time.Minute}); !ok {
			b.Fatal("no window")
		}
	}
}

// BenchmarkRetention30d fills a 30-day retention at 15s scrapes with a
// realistic model and reports the memory held.
func BenchmarkRetention30d(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		h := New(NewRetention(time.Hour, 30*24*time.Hour))
		fill(b, h, newSynthetic(10, 0), t0, 15*time.Second, 31*24*time.Hour)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(h.Len()), "points")
		b.ReportMetric(float64(heldBytes(h)), "bytes-held")
		b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heap-bytes")
		runtime.KeepAlive(h)
	}
}
