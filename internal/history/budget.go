package history

import (
	"unsafe"
)

// Memory accounting. Each series keeps a running estimate of the bytes its
// points and segment layouts hold, updated at every change, so that a
// history can enforce Retention.MaxBytes without walking its points on every
// scrape. The estimate counts what grows with the data a target sends: point
// headers, value vectors (raw or packed), segment layouts (entries, bucket
// edges, index and packing base), by length, so that equal data give equal
// estimates (a history restored from a state file reads the same). Slice
// growth headroom and map buckets are not counted, so the heap held is
// somewhat above the estimate (about one more point header per point).

// Sizes of the fixed parts, from the types themselves.
var (
	// modelEntryBytes is a rough cost of one model's entry besides its name
	// and points: the map entry (string header, pointer) and the series.
	modelEntryBytes    = int64(unsafe.Sizeof("")) + 8 + int64(unsafe.Sizeof(series{}))
	pointHeaderBytes   = int64(unsafe.Sizeof(point{}))
	reasonGaugesBytes  = int64(unsafe.Sizeof(reasonGauges{}))
	segmentHeaderBytes = int64(unsafe.Sizeof(segment{}))
	entryBytes         = int64(unsafe.Sizeof(entry{}))
	runBlockAggBytes   = int64(unsafe.Sizeof(runBlockAgg{}))
	memberBytes        = int64(unsafe.Sizeof(member{}))
	// indexEntryBytes is a rough cost of one map entry of segment.index.
	indexEntryBytes = int64(unsafe.Sizeof(key{})) + 8 + 16
)

// modelBytes is what one model holds besides its points: its name, which
// the target chooses (a model_name of a kilobyte costs a kilobyte), and its
// entry. It is counted in the history's total from the model's first point
// to its removal.
func modelBytes(name string) int64 {
	return int64(len(name)) + modelEntryBytes
}

// pointBytes is what one point holds.
func pointBytes(p *point) int64 {
	n := pointHeaderBytes + 8*int64(len(p.vals)) + int64(len(p.enc))
	if p.r != nil {
		n += reasonGaugesBytes
	}
	return n
}

// segmentBytes is what one segment's layout holds.
func segmentBytes(sg *segment) int64 {
	n := segmentHeaderBytes + 8*int64(len(sg.base))
	if m := sg.mem; m != nil {
		// A member of a run of single-point segments (runs.go): its record
		// and its share of the run's cums and block aggregates, one of each
		// per runBlock members. Which members hold them depends on when
		// the run began, which a restored history does not know; the share
		// does not, so equal points give equal estimates. The newest
		// member of an open run holds the run's running sum too.
		n += memberBytes + (8*int64(sg.size)+runBlockAggBytes)/runBlock
		if m.run.last == sg && m.run.sum != nil {
			n += 8 * int64(len(m.run.sum))
		}
	}
	for i := range sg.entries {
		n += entryBytes + indexEntryBytes + 8*int64(len(sg.entries[i].edges))
	}
	return n
}

// addPoint accounts for a point entering the series (its segment too, when
// this is the segment's first point).
func (s *series) addPoint(p *point) {
	if p.seg.refs == 0 {
		s.bytes += segmentBytes(p.seg)
	}
	p.seg.refs++
	s.bytes += pointBytes(p)
}

// removePoint accounts for a point leaving the series (its segment too, when
// no other point refers to it).
func (s *series) removePoint(p *point) {
	s.bytes -= pointBytes(p)
	p.seg.refs--
	if p.seg.refs == 0 {
		s.bytes -= segmentBytes(p.seg)
		if r := p.seg.openRun(); r != nil {
			// A run whose newest member is gone is closed (its running
			// sum went with the member's bytes): a later segment starts a
			// new one, as in a history restored now.
			r.sum = nil
		}
	}
}

// recount recomputes the estimate from scratch (after a state restore).
func (s *series) recount() {
	s.bytes = 0
	for _, tier := range s.tiers {
		for i := range tier {
			tier[i].seg.refs = 0
		}
	}
	for _, tier := range s.tiers {
		for i := range tier {
			s.addPoint(&tier[i])
		}
	}
}

// dropOldest removes the series' oldest point.
func (s *series) dropOldest() {
	for k := len(s.tiers) - 1; k >= 0; k-- {
		if len(s.tiers[k]) == 0 {
			continue
		}
		p := s.tiers[k][0]
		s.removePoint(&p)
		s.tiers[k][0] = point{}
		s.tiers[k] = s.tiers[k][1:]
		if len(s.tiers[k]) == 0 {
			s.tiers[k] = nil
		}
		return
	}
}

// minPointsKept is how many of its newest points a model always keeps,
// whatever the memory limit: two points make its shortest window.
const minPointsKept = 2

// enforceLimit drops the oldest points, across models, until the estimate is
// within limit or every model is down to minPointsKept points. Dropping from
// the old end only shortens how far back windows reach (they then start at
// the oldest point held and say so); nothing held becomes inexact. Models
// scraped together share times, so each pass drops every model's oldest
// point at the oldest time held.
func (h *History) enforceLimit(limit int64) {
	if limit <= 0 {
		return
	}
	for h.bytes > limit {
		oldest, found := int64(0), false
		for _, sr := range h.models {
			if sr.len() > minPointsKept {
				if p := sr.first(); !found || p.t < oldest {
					oldest, found = p.t, true
				}
			}
		}
		if !found {
			return
		}
		for _, sr := range h.models {
			if sr.len() > minPointsKept && sr.first().t == oldest {
				before := sr.bytes
				sr.dropOldest()
				h.bytes += sr.bytes - before
				h.dropped++
			}
		}
		h.truncated = max(h.truncated, oldest)
	}
}

// recountAll recomputes every model's estimate and the total.
func (h *History) recountAll() {
	h.bytes = 0
	for name, sr := range h.models {
		sr.recount()
		h.bytes += sr.bytes + modelBytes(name)
	}
}

// Usage is what a history holds against its memory limit.
type Usage struct {
	// Bytes is the estimate of the memory held by points and layouts.
	Bytes int64
	// Limit is Retention.MaxBytes (0: none).
	Limit int64
	// DroppedPoints counts points dropped to stay within Limit since the
	// history was created.
	DroppedPoints int
	// TruncatedBefore is the time of the newest point dropped for the limit:
	// windows cannot reach back before it. Zero when none was dropped.
	TruncatedBefore int64
}

// Usage reports the memory held and what the limit has dropped.
func (h *History) Usage() Usage {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return Usage{Bytes: h.bytes, Limit: h.ret.MaxBytes, DroppedPoints: h.dropped, TruncatedBefore: h.truncated}
}

// SetMaxBytes changes the memory limit (0: none) and enforces it at once.
func (h *History) SetMaxBytes(limit int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ret.MaxBytes = max(limit, 0)
	h.enforceLimit(h.ret.MaxBytes)
}
