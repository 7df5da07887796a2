package traces

import (
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Span is one request as a vLLM `llm_request` span describes it, already
// routed to a target. Latencies are in seconds, NaN when the span lacks them;
// token counts are -1 when absent.
type Span struct {
	Target, Model, Adapter string
	// RequestID is gen_ai.request.id.
	RequestID string
	// End is when the request finished: the span's end time.
	End time.Time
	// TTFT, E2E, Queue, Prefill, Decode and Inference are vLLM's
	// gen_ai.latency.* attributes.
	TTFT, E2E, Queue, Prefill, Decode, Inference float64
	PromptTokens, CompletionTokens               int
	// FinishReason is the first of gen_ai.response.finish_reasons, if any.
	FinishReason string
}

// record is one retained request: 80 bytes. Latencies stay float64 so that
// the exact numbers are the span's own, bit for bit.
type record struct {
	end                                          int64  // unix nanoseconds
	id                                           uint64 // hash of the request id
	ttft, e2e, queue, prefill, decode, inference float64
	prompt, completion                           int32 // -1: absent
	adapter                                      uint16
	reason                                       uint8
}

// RecordBytes is the size of one retained request in a Store, not counting
// the slice's spare capacity.
const RecordBytes = 80

// Limits bound a Store's memory.
type Limits struct {
	// Retain is how long a record is kept after the newest end time of its
	// series: the longest window plus the lateness a span is allowed.
	Retain time.Duration
	// MaxRecords caps the records of one target and model; the oldest go
	// first, which makes the windows that held them partial, never wrong.
	MaxRecords int
	// MaxModels and MaxAdapters cap the distinct model and adapter names per
	// target; spans beyond them are refused.
	MaxModels, MaxAdapters int
}

// series is the records of one target and model, sorted by end time.
type series struct {
	recs     []record
	adapters []string
	newest   int64
}

// Store holds the retained records of every target. It is safe for
// concurrent use.
type Store struct {
	mu      sync.Mutex
	limits  Limits
	seed    maphash.Seed
	reasons []string
	targets map[string]map[string]*series
}

// Outcome counts what Add did with a batch of spans.
type Outcome struct {
	// Added spans became records.
	Added int
	// Duplicates were the same request (id and end time) as a kept record.
	Duplicates int
	// TooOld ended before the retention of their series: too late to count.
	TooOld int
	// Refused exceeded the model or adapter cap.
	Refused int
}

// NewStore returns an empty store.
func NewStore(l Limits) *Store {
	return &Store{limits: l, seed: maphash.MakeSeed(), targets: map[string]map[string]*series{}}
}

// Add stores spans. A span whose request id and end time equal a kept
// record's is a duplicate (an exporter's retry sends the same span again) and
// counts once; two requests that share a client-chosen id but finished at
// different times are both kept. Spans may arrive late and in any order: each
// is placed by its end time.
func (s *Store) Add(spans []Span) Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out Outcome
	for i := range spans {
		switch s.add(&spans[i]) {
		case added:
			out.Added++
		case duplicate:
			out.Duplicates++
		case tooOld:
			out.TooOld++
		case refused:
			out.Refused++
		}
	}
	return out
}

type addResult int

const (
	added addResult = iota
	duplicate
	tooOld
	refused
)

func (s *Store) add(sp *Span) addResult {
	ser := s.series(sp.Target, sp.Model)
	if ser == nil {
		return refused
	}
	adapter, ok := ser.adapterIndex(sp.Adapter, s.limits.MaxAdapters)
	if !ok {
		return refused
	}
	r := record{
		end: sp.End.UnixNano(), id: maphash.String(s.seed, sp.RequestID),
		ttft: sp.TTFT, e2e: sp.E2E, queue: sp.Queue, prefill: sp.Prefill, decode: sp.Decode, inference: sp.Inference,
		prompt: clampTokens(sp.PromptTokens), completion: clampTokens(sp.CompletionTokens),
		adapter: adapter, reason: s.reasonIndex(sp.FinishReason),
	}
	if ser.newest != math.MinInt64 && r.end < ser.newest-int64(s.limits.Retain) {
		return tooOld
	}
	i := sort.Search(len(ser.recs), func(i int) bool { return ser.recs[i].end >= r.end })
	for j := i; j < len(ser.recs) && ser.recs[j].end == r.end; j++ {
		if ser.recs[j].id == r.id {
			return duplicate
		}
	}
	ser.recs = slices.Insert(ser.recs, i, r)
	if r.end > ser.newest {
		ser.newest = r.end
		ser.trim(ser.newest-int64(s.limits.Retain), s.limits.MaxRecords)
	} else if s.limits.MaxRecords > 0 && len(ser.recs) > s.limits.MaxRecords {
		ser.trim(math.MinInt64, s.limits.MaxRecords)
	}
	return added
}

// series returns the series of a target and model, creating it within the
// model cap; nil beyond it.
func (s *Store) series(target, model string) *series {
	byModel, ok := s.targets[target]
	if !ok {
		byModel = map[string]*series{}
		s.targets[target] = byModel
	}
	ser, ok := byModel[model]
	if !ok {
		if s.limits.MaxModels > 0 && len(byModel) >= s.limits.MaxModels {
			return nil
		}
		ser = &series{newest: math.MinInt64}
		byModel[model] = ser
	}
	return ser
}

func (ser *series) adapterIndex(name string, maxAdapters int) (uint16, bool) {
	if i := slices.Index(ser.adapters, name); i >= 0 {
		return uint16(i), true
	}
	if (maxAdapters > 0 && len(ser.adapters) >= maxAdapters) || len(ser.adapters) > math.MaxUint16 {
		return 0, false
	}
	ser.adapters = append(ser.adapters, name)
	return uint16(len(ser.adapters) - 1), true
}

// reasonIndex interns a finish reason; past 255 distinct ones, the rest
// share the last slot's name.
func (s *Store) reasonIndex(reason string) uint8 {
	if i := slices.Index(s.reasons, reason); i >= 0 {
		return uint8(i)
	}
	if len(s.reasons) > math.MaxUint8 {
		return math.MaxUint8
	}
	s.reasons = append(s.reasons, reason)
	return uint8(len(s.reasons) - 1)
}

// trim drops records that ended before cutoff, and the oldest beyond
// maxRecords (when positive). It reallocates once most of the backing array
// is dead, so memory follows the records kept.
func (ser *series) trim(cutoff int64, maxRecords int) {
	drop := sort.Search(len(ser.recs), func(i int) bool { return ser.recs[i].end >= cutoff })
	if maxRecords > 0 {
		drop = max(drop, len(ser.recs)-maxRecords)
	}
	if drop == 0 {
		return
	}
	ser.recs = ser.recs[drop:]
	if cap(ser.recs) > 2*len(ser.recs)+64 {
		ser.recs = slices.Clone(ser.recs)
	}
}

func clampTokens(n int) int32 {
	if n < 0 {
		return -1
	}
	return int32(min(n, math.MaxInt32))
}

// Selection is the records of one target and model that ended in a window.
type Selection struct {
	// All holds every selected request.
	All []slo.Measured
	// Adapters holds the requests per LoRA adapter ("" is the base model).
	Adapters map[string][]slo.Measured
	// FinishReasons counts the selected requests per finish reason.
	FinishReasons map[string]int
	// PromptTokens sums the prompt tokens of the selected requests.
	PromptTokens int
}

// Select returns the records of a target whose end time is in (start, end],
// of the model and, when unnamed is true, also of spans that named no model.
func (s *Store) Select(target, model string, unnamed bool, start, end time.Time) Selection {
	s.mu.Lock()
	defer s.mu.Unlock()
	sel := Selection{Adapters: map[string][]slo.Measured{}, FinishReasons: map[string]int{}}
	names := []string{model}
	if unnamed && model != "" {
		names = append(names, "")
	}
	for _, name := range names {
		ser, ok := s.targets[target][name]
		if !ok {
			continue
		}
		s.selectFrom(ser, start.UnixNano(), end.UnixNano(), &sel)
	}
	return sel
}

func (s *Store) selectFrom(ser *series, from, to int64, sel *Selection) {
	lo := sort.Search(len(ser.recs), func(i int) bool { return ser.recs[i].end > from })
	hi := sort.Search(len(ser.recs), func(i int) bool { return ser.recs[i].end > to })
	if hi <= lo {
		return
	}
	sel.All = slices.Grow(sel.All, hi-lo)
	for i := lo; i < hi; i++ {
		r := &ser.recs[i]
		m := r.measured()
		sel.All = append(sel.All, m)
		name := ser.adapters[r.adapter]
		sel.Adapters[name] = append(sel.Adapters[name], m)
		sel.FinishReasons[s.reasons[r.reason]]++
		sel.PromptTokens += int(max(r.prompt, 0))
	}
}

// measured turns a record into the slo package's request, deriving TPOT as
// vLLM does: decode/(n−1), with e2e − TTFT standing in for a missing decode.
func (r *record) measured() slo.Measured {
	decode := r.decode
	if math.IsNaN(decode) {
		decode = r.e2e - r.ttft
	}
	tpot := math.NaN()
	if r.completion >= 0 {
		tpot = slo.MeasuredTPOT(decode, int(r.completion))
	}
	return slo.Measured{
		TTFT: r.ttft, TPOT: tpot, E2E: r.e2e, Queue: r.queue, Prefill: r.prefill, Decode: r.decode, Inference: r.inference,
		CompletionTokens: int(max(r.completion, 0)),
	}
}

// Retained returns the number of records kept across all targets and
// models, and the bytes their backing arrays hold.
func (s *Store) Retained() (records int, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, byModel := range s.targets {
		for _, ser := range byModel {
			records += len(ser.recs)
			bytes += cap(ser.recs) * RecordBytes
		}
	}
	return records, bytes
}

// Forget drops the records of targets not in keep (after a reload removed them).
func (s *Store) Forget(keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.targets {
		if !keep[name] {
			delete(s.targets, name)
		}
	}
}
