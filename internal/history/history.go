package history

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// History is the record of ONE target's scrapes, per model_name. It is safe
// for concurrent use: Append, Forget and UnmarshalBinary take a write lock,
// every other method a read lock.
type History struct {
	mu     sync.RWMutex
	ret    Retention
	models map[string]*series
	// now is the time of the last accepted Append (Unix ns); valid when hasNow.
	now    int64
	hasNow bool
	resets int
	// dropped counts points dropped for Retention.MaxBytes; truncated is the
	// time (Unix ns) of the newest of them.
	dropped   int
	truncated int64
	// bytes is the sum of the models' memory estimates.
	bytes int64
	// windowReads counts the windows Window has answered (it runs under
	// the read lock, concurrently, hence atomic).
	windowReads atomic.Int64
}

// New returns an empty history with retention r. An invalid r (see
// Retention.Validate) is replaced by a single raw tier as long as r's longest
// Keep, at least an hour, so that memory stays bounded in every case.
func New(r Retention) *History {
	r = r.sanitized()
	return &History{ret: r, models: map[string]*series{}}
}

// Retention returns the tiers in use.
func (h *History) Retention() Retention {
	return Retention{Tiers: slices.Clone(h.ret.Tiers), MaxBytes: h.ret.MaxBytes}
}

// Append records one scrape. Its time must be after the previous accepted
// scrape's: an older or equal time (the clock stepped back, or a duplicate)
// is rejected with an error, as is a snapshot holding an unusable value
// (invalid histogram, NaN, infinite or negative count, sum or counter), and
// then nothing changes. Missing families carry their last value forward;
// models absent from the snapshot get no point. Points that age out are
// thinned into coarser tiers, and models whose points all aged out of the
// last tier are forgotten.
//
// A snapshot not newer than the last one is refused with ErrOutOfOrder.
func (h *History) Append(s *scrape.Snapshot) error {
	_, err := h.append(s, false, 0)
	return err
}

// Interval is one model's increase over the scrape interval an append
// closed: from the model's point at or before the previous accepted scrape
// to the new one.
type Interval struct {
	Model string
	// Window is the increase, gauges included.
	Window slo.Window
	// Warm is the same increase with the warm-up after each (re)start left
	// out (Options.Warmup); equal to Window without a warm-up.
	Warm slo.Window
}

// AppendIntervals is Append, returning the interval each model of the
// snapshot closed (sorted by model; none for a model's first point, nor for
// the history's first scrape), computed after thinning and the memory
// limit, exactly as Window(model, s.Time, s.Time − previous scrape) would
// answer it then. It lets a per-interval store be fed without reading the
// history back.
func (h *History) AppendIntervals(s *scrape.Snapshot, warmup time.Duration) ([]Interval, error) {
	return h.append(s, true, warmup)
}

// append is Append, with the closed intervals when intervals is set.
func (h *History) append(s *scrape.Snapshot, intervals bool, warmup time.Duration) ([]Interval, error) {
	if s == nil {
		return nil, errors.New("history: append: nil snapshot")
	}
	t, err := toNanos(s.Time)
	if err != nil {
		return nil, fmt.Errorf("history: append: %w", err)
	}
	for name, ms := range s.Models {
		if err := validateSample(ms); err != nil {
			return nil, fmt.Errorf("history: append %s: model %q: %w", s.Time.Format(time.RFC3339Nano), name, err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hasNow && t <= h.now {
		return nil, ErrOutOfOrder
	}
	for name, ms := range s.Models {
		if ms == nil {
			continue
		}
		sr := h.models[name]
		if sr == nil {
			sr = newSeries(len(h.ret.Tiers))
			h.models[name] = sr
			h.bytes += modelBytes(name)
		}
		before := sr.bytes
		if sr.add(t, ms) {
			h.resets++
		}
		h.bytes += sr.bytes - before
		sr.latest, sr.latestT = cloneSample(ms), t
	}
	prev, hadPrev := h.now, h.hasNow
	h.now, h.hasNow = t, true
	for name, sr := range h.models {
		before := sr.bytes
		sr.compact(t, h.ret.Tiers)
		h.bytes += sr.bytes - before
		if sr.len() == 0 {
			h.bytes -= sr.bytes + modelBytes(name)
			delete(h.models, name)
		}
	}
	h.enforceLimit(h.ret.MaxBytes)
	if !intervals || !hadPrev {
		return nil, nil
	}
	return h.closedIntervals(s, t-prev, warmup), nil
}

// closedIntervals lists the intervals of length (ns) that the snapshot's
// models closed at its time. h.mu must be held.
func (h *History) closedIntervals(s *scrape.Snapshot, length int64, warmup time.Duration) []Interval {
	var out []Interval
	for _, name := range slices.Sorted(maps.Keys(s.Models)) {
		sr := h.models[name]
		if sr == nil || s.Models[name] == nil {
			continue
		}
		w, ok := sr.window(s.Time, time.Duration(length), Options{}, h.ret.Tiers)
		if !ok {
			continue
		}
		iv := Interval{Model: name, Window: w, Warm: w}
		if warmup > 0 {
			iv.Warm, _ = sr.window(s.Time, time.Duration(length), Options{Warmup: warmup}, h.ret.Tiers)
		}
		out = append(out, iv)
	}
	return out
}

// PointTimes lists the times (Unix ns, oldest first) of the points held
// for a model: what a store that follows the history's retention keeps.
func (h *History) PointTimes(model string) []int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	sr := h.models[model]
	if sr == nil {
		return nil
	}
	out := make([]int64, 0, sr.len())
	for k := len(sr.tiers) - 1; k >= 0; k-- {
		for i := range sr.tiers[k] {
			out = append(out, sr.tiers[k][i].t)
		}
	}
	return out
}

// minTime and maxTime bound the times a history accepts: Unix nanoseconds
// from 1970 on, so that differences never overflow.
var (
	minTime = time.Unix(0, 0)
	maxTime = time.Unix(0, math.MaxInt64)
)

// ErrOutOfOrder refuses a snapshot whose time is not after the previous
// one's: the system clock stepped back. Its text never changes, so a clock
// that stays behind is logged once, not at every scrape.
var ErrOutOfOrder = errors.New("history: scrape time is not after the previous scrape's (the clock stepped back?); waiting for it to pass")

// toNanos converts an appended time to Unix nanoseconds, refusing times
// before 1970 or after 2262 (including the zero time).
func toNanos(t time.Time) (int64, error) {
	if t.Before(minTime) || t.After(maxTime) {
		return 0, fmt.Errorf("time %s outside 1970..2262", t.Format(time.RFC3339Nano))
	}
	return t.UnixNano(), nil
}

// clampNanos converts a query time to Unix nanoseconds, saturating outside
// the representable range (before 1970 becomes -1: before every point).
func clampNanos(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return -1
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// fromNanos converts stored Unix nanoseconds back to a UTC time.
func fromNanos(t int64) time.Time {
	return time.Unix(0, t).UTC()
}

// validateSample checks the values a history stores, so that windows never
// produce NaN or negative increases.
func validateSample(ms *scrape.ModelSample) error {
	if ms == nil {
		return nil
	}
	if bad(ms.Created) {
		return fmt.Errorf("created %v: must be finite and non-negative", ms.Created)
	}
	for f, hg := range ms.Histograms {
		if !hg.Valid() {
			return fmt.Errorf("histogram %s: invalid (edges %v, counts %v)", f, hg.Edges, hg.Counts)
		}
		for i, c := range hg.Counts {
			if math.IsInf(c, 0) {
				return fmt.Errorf("histogram %s: bucket le=%v count %v: must be finite", f, hg.Edges[i], c)
			}
		}
		if bad(hg.Sum) {
			return fmt.Errorf("histogram %s: sum %v: must be finite and non-negative", f, hg.Sum)
		}
	}
	for f, v := range ms.Counters {
		if bad(v) {
			return fmt.Errorf("counter %s: value %v: must be finite and non-negative", f, v)
		}
	}
	return nil
}

// bad reports whether v is not a usable cumulative value.
func bad(v float64) bool {
	return math.IsNaN(v) || math.IsInf(v, 0) || v < 0
}

// cloneSample deep-copies a sample so the caller may reuse its own.
func cloneSample(ms *scrape.ModelSample) *scrape.ModelSample {
	c := &scrape.ModelSample{
		Histograms: make(map[scrape.Family]slo.Histogram, len(ms.Histograms)),
		Counters:   maps.Clone(ms.Counters),
		Gauges:     maps.Clone(ms.Gauges),
		Created:    ms.Created,
		// TTFTAtFinish says how TTFT was observed; see scrape.ModelSample.
		TTFTAtFinish: ms.TTFTAtFinish,
	}
	for f, hg := range ms.Histograms {
		c.Histograms[f] = slo.Histogram{Edges: slices.Clone(hg.Edges), Counts: slices.Clone(hg.Counts), Sum: hg.Sum}
	}
	return c
}

// Models returns the model names held, sorted.
func (h *History) Models() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	names := make([]string, 0, len(h.models))
	for name := range h.models {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Latest returns the model's last appended sample and its time. The sample is
// the history's own copy: read it, never modify it.
func (h *History) Latest(model string) (time.Time, *scrape.ModelSample, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	sr := h.models[model]
	if sr == nil || sr.latest == nil {
		return time.Time{}, nil, false
	}
	return fromNanos(sr.latestT), sr.latest, true
}

// Len is the number of points held over all models (for memory checks).
func (h *History) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, sr := range h.models {
		n += sr.len()
	}
	return n
}

// Resets is the number of segment starts after the first (counter resets,
// vLLM restarts or bucket-layout changes) seen over all models since the
// history was created; Forget does not lower it.
func (h *History) Resets() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.resets
}

// ModelResets is the number of resets seen for one model while it was held.
func (h *History) ModelResets(model string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if sr := h.models[model]; sr != nil {
		return sr.resets
	}
	return 0
}

// Oldest is the time of the oldest point held; zero when empty.
func (h *History) Oldest() time.Time {
	h.mu.RLock()
	defer h.mu.RUnlock()
	oldest, found := int64(0), false
	for _, sr := range h.models {
		if p := sr.first(); p != nil && (!found || p.t < oldest) {
			oldest, found = p.t, true
		}
	}
	if !found {
		return time.Time{}
	}
	return fromNanos(oldest)
}

// Newest is the time of the last accepted Append; zero before the first.
func (h *History) Newest() time.Time {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if !h.hasNow {
		return time.Time{}
	}
	return fromNanos(h.now)
}

// Forget drops everything held for one model (cardinality control). It is a
// no-op for an unknown model.
func (h *History) Forget(model string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sr := h.models[model]; sr != nil {
		h.bytes -= sr.bytes + modelBytes(model)
	}
	delete(h.models, model)
}

// ForgetUnseen drops every model whose last scrape is before cutoff and
// returns their names, sorted. Models are also dropped automatically once
// all their points are older than the retention's longest Keep.
func (h *History) ForgetUnseen(cutoff time.Time) []string {
	c := clampNanos(cutoff)
	h.mu.Lock()
	defer h.mu.Unlock()
	var gone []string
	for name, sr := range h.models {
		if p := sr.last(); p == nil || p.t < c {
			gone = append(gone, name)
			h.bytes -= sr.bytes + modelBytes(name)
			delete(h.models, name)
		}
	}
	sort.Strings(gone)
	return gone
}

// WindowReads is the number of windows Window has answered since the
// history was created: what an evaluation costs, in history walks.
func (h *History) WindowReads() int64 {
	return h.windowReads.Load()
}
