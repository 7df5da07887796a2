package traces

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
	"unsafe"

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
	// CachedTokens is the prompt tokens read from the prefix cache
	// (gen_ai.usage.cache_read.input_tokens), -1 when absent. It is checked
	// like the other counts, not retained: no series is computed from it.
	CachedTokens int
	// FinishReason is the first of gen_ai.response.finish_reasons, if any.
	FinishReason string
}

// Valid reports whether every latency the span carries is a finite,
// non-negative number of seconds (NaN is "absent", not a value): vLLM never
// measures a negative or infinite time, so such a span is refused whole,
// as the scrape path refuses a negative or infinite sample.
func (s *Span) Valid() bool {
	for _, v := range [...]float64{s.TTFT, s.E2E, s.Queue, s.Prefill, s.Decode, s.Inference} {
		if v < 0 || math.IsInf(v, 0) {
			return false
		}
	}
	return true
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

// DefaultAhead is how far after the store's clock a span may end when
// Limits.Ahead is zero. vLLM stamps a span when the request finishes and
// sends it seconds later, so a span from the future means a clock that is
// off (the host's, or the sender's); a minute absorbs the skew of hosts
// kept in step by NTP.
const DefaultAhead = time.Minute

// tailMax is the most out-of-order records a series keeps unsorted before
// it sorts them in (see series).
const tailMax = 4096

// Limits bound a Store's memory.
type Limits struct {
	// Retain is how long a record is kept, measured on the store's clock
	// back from now: the longest window plus the lateness a span is
	// allowed. A span that ended before then is refused as too old.
	Retain time.Duration
	// Ahead is how far after now a span may end; later ones are refused as
	// too new. Zero means DefaultAhead.
	Ahead time.Duration
	// MaxRecords caps the records of one target and model; the oldest go
	// first, which makes the windows that held them partial, never wrong.
	MaxRecords int
	// MaxTargetRecords caps the records of one target across its models:
	// beyond it, the model holding the most records loses its oldest, so
	// that a flood of one model (or of many junk names) cannot push out a
	// small one's records first. Zero: no cap beyond MaxRecords per model.
	MaxTargetRecords int
	// MaxModels and MaxAdapters cap the distinct model and adapter names per
	// target; spans beyond them are refused. A model whose records have all
	// expired frees its slot.
	MaxModels, MaxAdapters int
	// Now is the store's clock; nil means time.Now. The daemon passes its
	// own, tests a virtual one.
	Now func() time.Time
	// Wall, when set, is the wall clock the senders stamp spans with, while
	// Now is another (the daemon's steady clock, which a step of the wall
	// clock does not move). Each span's end is then moved onto Now's time
	// line by Now − Wall read as it arrives, so that a request is filed
	// where the scrapes (taken on Now) see it finish, before and after a
	// step of the wall clock alike. Nil: spans are on Now's time line.
	Wall func() time.Time
}

// recKey identifies a request among the out-of-order records of a series.
type recKey struct {
	end int64
	id  uint64
}

// series is the records of one target and model. recs is sorted by end
// time. A span that ends before the newest record goes to tail, unsorted
// (its key in tailKeys, for duplicates), and tail is merged into recs when
// it reaches tailMax or when the series is read: one merge per batch of
// late spans instead of moving every newer record once per span, so
// out-of-order spans cost time proportional to how late they are, not to
// the size of the store.
type series struct {
	recs     []record
	tail     []record
	tailKeys map[recKey]struct{}
	tailMin  int64 // the oldest end in tail; math.MaxInt64 when empty
	// front counts the dropped records still before recs[0] in its array.
	front    int
	adapters []string
	// sealed holds the sealed scrape intervals, oldest first, disjoint
	// (sealed.go), nSealed their records.
	sealed  []sealed
	nSealed int
}

// targetSeries is the series of one target, by model, and their total size.
type targetSeries struct {
	models  map[string]*series
	records int
}

// Store holds the retained records of every target. It is safe for
// concurrent use.
type Store struct {
	mu      sync.Mutex
	limits  Limits
	seed    maphash.Seed
	reasons []string
	targets map[string]*targetSeries
}

// Outcome counts what Add did with a batch of spans.
type Outcome struct {
	// Added spans became records.
	Added int
	// Duplicates were the same request (id and end time) as a kept record.
	Duplicates int
	// TooOld ended before the retention: too late to count.
	TooOld int
	// TooNew ended more than Limits.Ahead after the store's clock.
	TooNew int
	// Invalid carried a negative or infinite latency (see Span.Valid).
	Invalid int
	// Refused exceeded the model or adapter cap.
	Refused int
}

// NewStore returns an empty store.
func NewStore(l Limits) *Store {
	if l.Ahead <= 0 {
		l.Ahead = DefaultAhead
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	return &Store{limits: l, seed: maphash.MakeSeed(), targets: map[string]*targetSeries{}}
}

// Add stores spans. A span whose request id and end time equal a kept
// record's is a duplicate (an exporter's retry sends the same span again) and
// counts once; two requests that share a client-chosen id but finished at
// different times are both kept. Spans may arrive late and in any order: each
// is placed by its end time. Spans that ended before the retention or too
// far in the future are refused; so is a span with an invalid latency.
func (s *Store) Add(spans []Span) Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.limits.Now().UnixNano()
	s.expire(now)
	var shift int64 // from the senders' wall clock to the store's
	if s.limits.Wall != nil {
		shift = now - s.limits.Wall().UnixNano()
	}
	var out Outcome
	for i := range spans {
		switch s.add(&spans[i], now, shift) {
		case added:
			out.Added++
		case duplicate:
			out.Duplicates++
		case tooOld:
			out.TooOld++
		case tooNew:
			out.TooNew++
		case invalid:
			out.Invalid++
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
	tooNew
	invalid
	refused
)

func (s *Store) add(sp *Span, now, shift int64) addResult {
	end := sp.End.UnixNano() + shift
	switch {
	case !sp.Valid():
		return invalid
	case end < now-int64(s.limits.Retain):
		return tooOld
	case end > now+int64(s.limits.Ahead):
		return tooNew
	}
	ts, ser := s.series(sp.Target, sp.Model)
	if ser == nil {
		return refused
	}
	adapter, ok := ser.adapterIndex(sp.Adapter, s.limits.MaxAdapters)
	if !ok {
		return refused
	}
	r := record{
		end: end, id: maphash.String(s.seed, sp.RequestID),
		ttft: unsigned(sp.TTFT), e2e: unsigned(sp.E2E), queue: unsigned(sp.Queue), prefill: unsigned(sp.Prefill), decode: unsigned(sp.Decode), inference: unsigned(sp.Inference),
		prompt: clampTokens(sp.PromptTokens), completion: clampTokens(sp.CompletionTokens),
		adapter: adapter, reason: s.reasonIndex(sp.FinishReason),
	}
	if !ser.insert(r) {
		return duplicate
	}
	ts.records++
	if m := s.limits.MaxRecords; m > 0 {
		for ser.len() > m {
			ts.records -= ser.dropOldest()
		}
	}
	if m := s.limits.MaxTargetRecords; m > 0 {
		for ts.records > m {
			ts.records -= ts.largest().dropOldest()
		}
	}
	return added
}

// series returns the series of a target and model, creating it within the
// model cap; nil beyond it.
func (s *Store) series(target, model string) (*targetSeries, *series) {
	ts, ok := s.targets[target]
	if !ok {
		ts = &targetSeries{models: map[string]*series{}}
		s.targets[target] = ts
	}
	ser, ok := ts.models[model]
	if !ok {
		if s.limits.MaxModels > 0 && len(ts.models) >= s.limits.MaxModels {
			return ts, nil
		}
		ser = &series{tailMin: math.MaxInt64}
		ts.models[model] = ser
	}
	return ts, ser
}

// largest returns the series holding the most records (the first by name
// among equals, so that the choice does not depend on map order).
func (ts *targetSeries) largest() *series {
	var best *series
	bestName := ""
	for name, ser := range ts.models {
		if best == nil || ser.len() > best.len() || (ser.len() == best.len() && name < bestName) {
			best, bestName = ser, name
		}
	}
	return best
}

// expire drops the records that ended before the retention, measured back
// from now, and the series (and their model slots) left empty.
func (s *Store) expire(now int64) {
	cutoff := now - int64(s.limits.Retain)
	for name, ts := range s.targets {
		for model, ser := range ts.models {
			ts.records -= ser.expire(cutoff)
			if ser.len() == 0 {
				delete(ts.models, model)
			}
		}
		if len(ts.models) == 0 {
			delete(s.targets, name)
		}
	}
}

func (ser *series) len() int { return len(ser.recs) + len(ser.tail) + ser.nSealed }

// insert places r by its end time; false when it is a duplicate of a kept
// record (same end time and request id).
func (ser *series) insert(r record) bool {
	if len(ser.sealed) > 0 && r.end <= ser.sealed[len(ser.sealed)-1].end && ser.sealedHolds(recKey{r.end, r.id}) {
		return false
	}
	n := len(ser.recs)
	if n == 0 || r.end >= ser.recs[n-1].end {
		// In order, the common case. The tail holds only records that
		// ended before recs' newest, so only recs' newest run can match.
		for j := n - 1; j >= 0 && ser.recs[j].end == r.end; j-- {
			if ser.recs[j].id == r.id {
				return false
			}
		}
		ser.appendRecs(r)
		return true
	}
	i := sort.Search(n, func(i int) bool { return ser.recs[i].end >= r.end })
	for j := i; j < n && ser.recs[j].end == r.end; j++ {
		if ser.recs[j].id == r.id {
			return false
		}
	}
	key := recKey{r.end, r.id}
	if _, ok := ser.tailKeys[key]; ok {
		return false
	}
	if ser.tailKeys == nil {
		ser.tailKeys = map[recKey]struct{}{}
	}
	ser.tailKeys[key] = struct{}{}
	ser.tail = append(ser.tail, r)
	ser.tailMin = min(ser.tailMin, r.end)
	if len(ser.tail) >= tailMax {
		ser.merge()
	}
	return true
}

// merge sorts the tail into recs, from the back: only the records newer
// than the tail's oldest move.
func (ser *series) merge() {
	k := len(ser.tail)
	if k == 0 {
		return
	}
	slices.SortFunc(ser.tail, func(a, b record) int { return cmp.Compare(a.end, b.end) })
	n := len(ser.recs)
	ser.appendRecs(ser.tail...)
	i, j := n-1, k-1
	for w := n + k - 1; j >= 0; w-- {
		if i >= 0 && ser.recs[i].end > ser.tail[j].end {
			ser.recs[w] = ser.recs[i]
			i--
		} else {
			ser.recs[w] = ser.tail[j]
			j--
		}
	}
	ser.tail, ser.tailKeys, ser.tailMin = nil, nil, math.MaxInt64
}

// dropOldest drops the series' oldest record, which is recs' first unless
// the tail holds an older one (then found by a scan of the tail, at most
// tailMax records), and returns how many it dropped: the oldest sealed
// block whole when it is older than both (its records are no longer rows).
func (ser *series) dropOldest() int {
	if len(ser.sealed) > 0 {
		b := &ser.sealed[0]
		if first := b.keys[0].end; (len(ser.recs) == 0 || first <= ser.recs[0].end) && (len(ser.tail) == 0 || first <= ser.tailMin) {
			n := len(b.keys)
			ser.sealed = slices.Delete(ser.sealed, 0, 1)
			ser.nSealed -= n
			return n
		}
	}
	if len(ser.tail) == 0 || (len(ser.recs) > 0 && ser.recs[0].end <= ser.tailMin) {
		ser.dropFront(1)
		return 1
	}
	oldest := 0
	for i, r := range ser.tail {
		if r.end < ser.tail[oldest].end {
			oldest = i
		}
	}
	ser.removeTail(func(i int, _ record) bool { return i == oldest })
	return 1
}

// expire drops the records that ended before cutoff and returns how many.
func (ser *series) expire(cutoff int64) int {
	dropped := ser.expireSealed(cutoff)
	if len(ser.recs) > 0 && ser.recs[0].end < cutoff {
		drop := sort.Search(len(ser.recs), func(i int) bool { return ser.recs[i].end >= cutoff })
		ser.dropFront(drop)
		dropped += drop
	}
	if ser.tailMin < cutoff {
		before := len(ser.tail)
		ser.removeTail(func(_ int, r record) bool { return r.end < cutoff })
		dropped += before - len(ser.tail)
	}
	return dropped
}

// removeTail deletes the tail records for which drop is true.
func (ser *series) removeTail(drop func(i int, r record) bool) {
	kept := ser.tail[:0]
	ser.tailMin = math.MaxInt64
	for i, r := range ser.tail {
		if drop(i, r) {
			delete(ser.tailKeys, recKey{r.end, r.id})
			continue
		}
		kept = append(kept, r)
		ser.tailMin = min(ser.tailMin, r.end)
	}
	ser.tail = kept
	if len(kept) == 0 {
		ser.tail, ser.tailKeys = nil, nil
	}
}

// appendRecs appends to recs (merge overwrites the appended records).
func (ser *series) appendRecs(rs ...record) {
	c := cap(ser.recs)
	ser.recs = append(ser.recs, rs...)
	if cap(ser.recs) != c {
		ser.front = 0 // a new array: nothing dead before recs[0]
	}
}

// dropFront drops recs' n oldest records. The backing array is reallocated
// once most of it is dead (dropped records before recs[0], or spare
// capacity), so that memory follows the records kept; an empty series lets
// go of its array.
func (ser *series) dropFront(n int) {
	ser.recs = ser.recs[n:]
	ser.front += n
	switch {
	case len(ser.recs) == 0:
		ser.recs, ser.front = nil, 0
	case ser.front+cap(ser.recs) > 2*len(ser.recs)+64:
		ser.recs, ser.front = slices.Clone(ser.recs), 0
	}
}

// bytes is the size of the series' arrays.
func (ser *series) bytes() int {
	return (ser.front+cap(ser.recs)+cap(ser.tail))*RecordBytes + len(ser.tailKeys)*int(unsafe.Sizeof(recKey{})) + ser.sealedBytes()
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

// unsigned keeps a latency of −0 as 0: the same number, and one zero, so
// that which of two equal values a quantile picks cannot show in its sign
// (the sealed and the row evaluation pick differently among equals).
func unsigned(v float64) float64 {
	if v == 0 {
		return 0
	}
	return v
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
// of the model and, when unnamed is true, also of spans that named no model:
// the records still rows, not those of sealed scrape intervals (sealed.go),
// which EvaluateWindow reads.
func (s *Store) Select(target, model string, unnamed bool, start, end time.Time) Selection {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.limits.Now().UnixNano())
	sel := Selection{Adapters: map[string][]slo.Measured{}, FinishReasons: map[string]int{}}
	names := []string{model}
	if unnamed && model != "" {
		names = append(names, "")
	}
	ts, ok := s.targets[target]
	if !ok {
		return sel
	}
	for _, name := range names {
		ser, ok := ts.models[name]
		if !ok {
			continue
		}
		ser.merge()
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
	// Counted by index, named once: no map access per record.
	var reasons [math.MaxUint8 + 1]int
	perAdapter := make([]int, len(ser.adapters))
	for i := lo; i < hi; i++ {
		perAdapter[ser.recs[i].adapter]++
	}
	adapters := make([][]slo.Measured, len(ser.adapters))
	for a, n := range perAdapter {
		adapters[a] = make([]slo.Measured, 0, n)
	}
	for i := lo; i < hi; i++ {
		r := &ser.recs[i]
		m := r.measured()
		sel.All = append(sel.All, m)
		adapters[r.adapter] = append(adapters[r.adapter], m)
		reasons[r.reason]++
		sel.PromptTokens += int(max(r.prompt, 0))
	}
	for i, ms := range adapters {
		if len(ms) == 0 {
			continue
		}
		if name := ser.adapters[i]; len(sel.Adapters[name]) == 0 {
			sel.Adapters[name] = ms
		} else {
			sel.Adapters[name] = append(sel.Adapters[name], ms...)
		}
	}
	for i, n := range reasons {
		if n > 0 {
			sel.FinishReasons[s.reasons[i]] += n
		}
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
// models, and the bytes their arrays hold, after dropping the expired ones.
func (s *Store) Retained() (records int, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.limits.Now().UnixNano())
	for _, ts := range s.targets {
		for _, ser := range ts.models {
			records += ser.len()
			bytes += ser.bytes()
		}
	}
	return records, bytes
}

// Models returns the number of model slots in use for a target.
func (s *Store) Models(target string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.limits.Now().UnixNano())
	if ts, ok := s.targets[target]; ok {
		return len(ts.models)
	}
	return 0
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
