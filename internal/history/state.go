package history

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// stateVersion is the version of the state-file format written by
// MarshalBinary; UnmarshalBinary refuses any other.
const stateVersion = 1

// The state-file format (gob). Segments are listed per model and points refer
// to them by index, so shared layouts are written once.
type (
	stateFile struct {
		Version int
		Now     int64
		HasNow  bool
		Resets  int
		Models  []modelState
	}
	modelState struct {
		Name     string
		Resets   int
		Segments []segmentState
		Points   []pointState // oldest first
		Latest   *scrape.ModelSample
		LatestT  int64
	}
	segmentState struct {
		Kinds     []int
		Families  []string
		Edges     [][]float64
		Created   float64
		Start     int64
		Observed  bool
		Continues bool
	}
	pointState struct {
		T      int64
		Tier   int
		Seg    int
		Vals   []float64
		Gauges [numGauges][4]float64 // v, integral, known, max
	}
)

// MarshalBinary encodes the whole history (points, segments, latest samples,
// reset counts) for a state file, so it survives a daemon restart.
func (h *History) MarshalBinary() ([]byte, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	st := stateFile{Version: stateVersion, Now: h.now, HasNow: h.hasNow, Resets: h.resets}
	for _, name := range slices.Sorted(maps.Keys(h.models)) {
		sr := h.models[name]
		ms := modelState{Name: name, Resets: sr.resets, Latest: sr.latest, LatestT: sr.latestT}
		segIndex := map[*segment]int{}
		for k := len(sr.tiers) - 1; k >= 0; k-- {
			for i := range sr.tiers[k] {
				p := &sr.tiers[k][i]
				si, ok := segIndex[p.seg]
				if !ok {
					si = len(ms.Segments)
					segIndex[p.seg] = si
					ms.Segments = append(ms.Segments, encodeSegment(p.seg))
				}
				ps := pointState{T: p.t, Tier: k, Seg: si, Vals: p.values()}
				for g, gs := range p.g {
					ps.Gauges[g] = [4]float64{gs.v, gs.integral, gs.known, gs.max}
				}
				ms.Points = append(ms.Points, ps)
			}
		}
		st.Models = append(st.Models, ms)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&st); err != nil {
		return nil, fmt.Errorf("history: encode state: %w", err)
	}
	return buf.Bytes(), nil
}

func encodeSegment(sg *segment) segmentState {
	ss := segmentState{Created: sg.created, Start: sg.start, Observed: sg.observed, Continues: sg.continues}
	for _, e := range sg.entries {
		ss.Kinds = append(ss.Kinds, int(e.kind))
		ss.Families = append(ss.Families, string(e.fam))
		ss.Edges = append(ss.Edges, e.edges)
	}
	return ss
}

// UnmarshalBinary replaces the history's contents with a state written by
// MarshalBinary, keeping the receiver's retention (points of tiers it lacks
// join its last tier, and are thinned at the next Append). Data of an unknown
// version, corrupt or inconsistent data is an error, and the history is then
// left unchanged.
func (h *History) UnmarshalBinary(data []byte) (err error) {
	var st stateFile
	if err := decodeState(data, &st); err != nil {
		return err
	}
	if st.Version != stateVersion {
		return fmt.Errorf("history: state version %d: only version %d is supported", st.Version, stateVersion)
	}
	if st.Resets < 0 {
		return fmt.Errorf("history: state: resets %d: negative", st.Resets)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	models := map[string]*series{}
	for _, ms := range st.Models {
		if _, dup := models[ms.Name]; dup {
			return fmt.Errorf("history: state: model %q listed twice", ms.Name)
		}
		sr, err := decodeModel(ms, len(h.ret.Tiers))
		if err != nil {
			return fmt.Errorf("history: state: model %q: %w", ms.Name, err)
		}
		if last := sr.last(); last != nil && (!st.HasNow || last.t > st.Now) {
			return fmt.Errorf("history: state: model %q: point at %d after the state's time %d", ms.Name, last.t, st.Now)
		}
		if sr.len() > 0 {
			models[ms.Name] = sr
		}
	}
	h.models, h.now, h.hasNow, h.resets = models, st.Now, st.HasNow, st.Resets
	h.recountAll()
	h.enforceLimit(h.ret.MaxBytes)
	return nil
}

// decodeState runs gob, turning any panic on hostile input into an error.
func decodeState(data []byte, st *stateFile) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("history: decode state: corrupt data: %v", r)
		}
	}()
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(st); err != nil {
		return fmt.Errorf("history: decode state (%d bytes): %w", len(data), err)
	}
	return nil
}

// decodeModel rebuilds one model's series, checking everything the queries
// rely on: known segments, times after 1970 strictly increasing, tiers
// coarsest first, value vectors that are prefixes of their layouts, finite
// non-negative values that never decrease within a segment, finite gauge
// integrals over a non-decreasing known time.
func decodeModel(ms modelState, nTiers int) (*series, error) {
	if ms.Resets < 0 {
		return nil, fmt.Errorf("resets %d: negative", ms.Resets)
	}
	segs := make([]*segment, len(ms.Segments))
	for i, ss := range ms.Segments {
		sg, err := decodeSegment(ss)
		if err != nil {
			return nil, fmt.Errorf("segment %d: %w", i, err)
		}
		segs[i] = sg
	}
	sr := newSeries(nTiers)
	sr.resets = ms.Resets
	var prev *point
	var prevVals []float64
	prevTier, prevSeg := math.MaxInt, -1
	for i, ps := range ms.Points {
		p, tier, err := decodePoint(ps, segs, prev, prevVals, prevTier, prevSeg, nTiers)
		if err != nil {
			return nil, fmt.Errorf("point %d: %w", i, err)
		}
		prevVals = p.vals
		if tier > 0 {
			p.packPoint()
		}
		sr.tiers[tier] = append(sr.tiers[tier], p)
		prev = &sr.tiers[tier][len(sr.tiers[tier])-1]
		prevTier, prevSeg = tier, ps.Seg
	}
	if ms.Latest != nil {
		if err := validateSample(ms.Latest); err != nil {
			return nil, fmt.Errorf("latest sample: %w", err)
		}
		sr.latest, sr.latestT = cloneSample(ms.Latest), ms.LatestT
	}
	sr.recount()
	sr.rebuildRuns()
	return sr, nil
}

// decodePoint rebuilds one point (its values raw) and the tier it joins,
// checking it against the previous point of the model (prev, nil for the
// first; prevVals its values, of tier prevTier and segment index prevSeg).
func decodePoint(ps pointState, segs []*segment, prev *point, prevVals []float64, prevTier, prevSeg, nTiers int) (point, int, error) {
	if ps.Seg < 0 || ps.Seg >= len(segs) {
		return point{}, 0, fmt.Errorf("segment %d out of range", ps.Seg)
	}
	if ps.Seg < prevSeg {
		return point{}, 0, fmt.Errorf("segment %d after segment %d", ps.Seg, prevSeg)
	}
	if ps.T < 0 || (prev != nil && ps.T <= prev.t) {
		return point{}, 0, fmt.Errorf("time %d not after the previous point", ps.T)
	}
	tier := min(ps.Tier, nTiers-1)
	if ps.Tier < 0 || tier > prevTier {
		return point{}, 0, fmt.Errorf("tier %d out of order", ps.Tier)
	}
	sg := segs[ps.Seg]
	if !isPrefix(sg, len(ps.Vals)) {
		return point{}, 0, fmt.Errorf("%d values do not fit the segment layout", len(ps.Vals))
	}
	if prev == nil || prev.seg != sg {
		prevVals = nil // values only never decrease within a segment
	}
	if err := checkValues(ps.Vals, prevVals); err != nil {
		return point{}, 0, err
	}
	p := point{t: ps.T, seg: sg, vals: slices.Clone(ps.Vals)}
	for g := range p.g {
		v := ps.Gauges[g]
		if math.IsNaN(v[1]) || math.IsInf(v[1], 0) || bad(v[2]) || (prev != nil && v[2] < prev.g[g].known) {
			return point{}, 0, fmt.Errorf("gauge %s aggregates %v unusable", gaugeFamily(g), v)
		}
		p.g[g] = gaugeState{v: v[0], integral: v[1], known: v[2], max: v[3]}
	}
	return p, tier, nil
}

// checkValues checks a point's values: usable cumulative values, at least
// as many as the segment's previous point's (prev, nil for a segment's
// first) and none below it.
func checkValues(vals, prev []float64) error {
	if len(vals) < len(prev) {
		return fmt.Errorf("%d values, fewer than the %d of the segment's previous point", len(vals), len(prev))
	}
	for j, v := range vals {
		if bad(v) {
			return fmt.Errorf("value %d is %v", j, v)
		}
		if j < len(prev) && v < prev[j] {
			return fmt.Errorf("value %d decreases within a segment", j)
		}
	}
	return nil
}

func decodeSegment(ss segmentState) (*segment, error) {
	if len(ss.Kinds) != len(ss.Families) || len(ss.Kinds) != len(ss.Edges) {
		return nil, fmt.Errorf("layout lists of different lengths (%d, %d, %d)", len(ss.Kinds), len(ss.Families), len(ss.Edges))
	}
	if bad(ss.Created) {
		return nil, fmt.Errorf("created %v: must be finite and non-negative", ss.Created)
	}
	sg := newSegment(ss.Start, ss.Observed)
	sg.created, sg.continues = ss.Created, ss.Continues
	for i, kind := range ss.Kinds {
		k := key{kind: scrape.Kind(kind), fam: scrape.Family(ss.Families[i])}
		if sg.lookup(k) != nil {
			return nil, fmt.Errorf("family %s listed twice", k.fam)
		}
		switch k.kind {
		case scrape.KindCounter:
			if len(ss.Edges[i]) > 0 {
				return nil, fmt.Errorf("counter %s has bucket edges", k.fam)
			}
		case scrape.KindHistogram:
			edges := ss.Edges[i]
			if !validEdges(edges) {
				return nil, fmt.Errorf("histogram %s: invalid edges %v", k.fam, edges)
			}
		default:
			return nil, fmt.Errorf("family %s: kind %d not stored", k.fam, kind)
		}
		sg.add(k, ss.Edges[i])
	}
	return sg, nil
}

// validEdges reports whether edges ascend strictly and end in +Inf.
func validEdges(edges []float64) bool {
	n := len(edges)
	if n == 0 || !math.IsInf(edges[n-1], 1) {
		return false
	}
	for i, e := range edges {
		if math.IsNaN(e) || (i > 0 && e <= edges[i-1]) {
			return false
		}
	}
	return true
}

// isPrefix reports whether n values cover exactly the segment's first few
// entries.
func isPrefix(sg *segment, n int) bool {
	if n == 0 {
		return true
	}
	for i := range sg.entries {
		if sg.entries[i].end() == n {
			return true
		}
	}
	return false
}
