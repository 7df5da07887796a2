package traces

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestFutureSpanKeepsTheStore: a span that ends far in the future (a sender
// whose clock jumped) is refused as too new; it neither evicts the records
// kept nor makes later, correct spans too old.
func TestFutureSpanKeepsTheStore(t *testing.T) {
	c := &clock{t0.Add(time.Hour)}
	s := NewStore(Limits{Retain: time.Hour, Now: c.Now})
	var spans []Span
	for i := range 5000 {
		spans = append(spans, span(fmt.Sprint(i), time.Duration(i+1)*700*time.Millisecond, 1))
	}
	if out := s.Add(spans); out.Added != 5000 {
		t.Fatalf("Add = %+v", out)
	}
	future := span("future", 0, 1)
	future.End = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
	skewed := span("skewed", time.Hour+DefaultAhead+time.Second, 1)
	if out := s.Add([]Span{future, skewed}); out.TooNew != 2 || out.Added != 0 {
		t.Errorf("Add of spans from the future = %+v, want both too new", out)
	}
	if n, _ := s.Retained(); n != 5000 {
		t.Errorf("%d records kept after a span from the future, want 5000", n)
	}
	within := span("within", time.Hour+DefaultAhead, 1)
	later := span("later", time.Hour-time.Second, 1)
	if out := s.Add([]Span{within, later}); out.Added != 2 {
		t.Errorf("Add of spans ending now and within the allowed skew = %+v, want both added", out)
	}
}

// TestRecordsExpireByTheClock: with no span arriving, records go once they
// are older than the retention on the store's clock, and the models they
// belonged to free their slots: a real model refused while 100 junk ones
// held every slot is accepted once they expired.
func TestRecordsExpireByTheClock(t *testing.T) {
	c := &clock{t0}
	s := NewStore(Limits{Retain: 7 * time.Minute, MaxModels: 100, Now: c.Now})
	var junk []Span
	for m := range 100 {
		for i := range 100 {
			sp := span(fmt.Sprint(i), -time.Duration(i)*time.Second, 1)
			sp.Model = fmt.Sprintf("junk-%d", m)
			junk = append(junk, sp)
		}
	}
	if out := s.Add(junk); out.Added != len(junk) {
		t.Fatalf("Add = %+v", out)
	}
	real := span("real", 0, 1)
	real.Model = "real"
	if out := s.Add([]Span{real}); out.Refused != 1 {
		t.Fatalf("Add beyond 100 models = %+v, want refused", out)
	}
	c.now = t0.Add(9 * time.Minute)
	if n, bytes := s.Retained(); n != 0 || bytes != 0 {
		t.Errorf("9 minutes after the last span with a 7m retention: %d records, %d bytes kept, want none", n, bytes)
	}
	if n := s.Models("gpu0"); n != 0 {
		t.Errorf("%d model slots held by expired records, want 0", n)
	}
	real.End = c.now
	if out := s.Add([]Span{real}); out.Added != 1 {
		t.Errorf("Add of a real model after the junk expired = %+v, want added", out)
	}
}

// TestTargetCap: a target's records across models stay under
// MaxTargetRecords; the model holding the most loses its oldest first, so a
// flood of one model does not evict a small one.
func TestTargetCap(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, MaxTargetRecords: 100, Now: at(time.Hour)})
	small := []Span{span("s1", time.Second, 1), span("s2", 2*time.Second, 1)}
	for i := range small {
		small[i].Model = "small"
	}
	s.Add(small)
	var flood []Span
	for i := range 1000 {
		flood = append(flood, span(fmt.Sprint(i), time.Minute+time.Duration(i)*time.Millisecond, 1))
	}
	s.Add(flood)
	if n, _ := s.Retained(); n != 100 {
		t.Errorf("%d records kept, cap 100", n)
	}
	if got := len(s.Select("gpu0", "small", false, t0, t0.Add(time.Hour)).All); got != 2 {
		t.Errorf("the small model keeps %d of its 2 records", got)
	}
	kept := s.Select("gpu0", "m", false, t0, t0.Add(time.Hour)).All
	if len(kept) != 98 {
		t.Errorf("the flooding model keeps %d records, want 98 (its newest)", len(kept))
	}
}

// TestInvalidSpansRefused: a negative or infinite latency refuses the span
// whole; NaN (absent) does not.
func TestInvalidSpansRefused(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Hour)})
	negTTFT, infE2E, negDecode, absent := span("a", time.Second, 1), span("b", time.Second, 1), span("c", time.Second, 1), span("d", time.Second, 1)
	negTTFT.TTFT = -100
	infE2E.E2E = math.Inf(1)
	negDecode.Decode = math.Inf(-1)
	absent.Queue = math.NaN()
	if out := s.Add([]Span{negTTFT, infE2E, negDecode, absent}); out.Invalid != 3 || out.Added != 1 {
		t.Errorf("Add = %+v, want 3 invalid and the span without a queue time added", out)
	}
}

// TestOutOfOrderEqualsSorted: spans added in any order, with duplicates
// among them, select exactly what the same spans sorted select, after every
// batch, including across the merges of the out-of-order records.
func TestOutOfOrderEqualsSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := NewStore(Limits{Retain: time.Hour, Now: at(time.Hour)})
	ref := NewStore(Limits{Retain: time.Hour, Now: at(time.Hour)})
	var all []Span
	for i := range 12000 {
		sp := span(fmt.Sprint(i%9500), time.Duration(rng.IntN(3600000))*time.Millisecond, float64(i%7))
		all = append(all, sp, sp) // every span twice: the second is a duplicate
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	added := 0
	for i := 0; i < len(all); i += 1000 {
		out := s.Add(all[i : i+1000])
		added += out.Added
		if out.Added+out.Duplicates != 1000 {
			t.Fatalf("Add = %+v", out)
		}
	}
	sorted := slices.Clone(all)
	slices.SortStableFunc(sorted, func(a, b Span) int { return a.End.Compare(b.End) })
	if out := ref.Add(sorted); out.Added != added {
		t.Fatalf("%d added in order, %d out of order", out.Added, added)
	}
	for _, w := range [][2]time.Duration{{0, time.Hour}, {10 * time.Minute, 20 * time.Minute}, {59 * time.Minute, time.Hour}} {
		got := s.Select("gpu0", "m", false, t0.Add(w[0]), t0.Add(w[1])).All
		want := ref.Select("gpu0", "m", false, t0.Add(w[0]), t0.Add(w[1])).All
		if len(got) != len(want) {
			t.Fatalf("window %v: %d records, sorted input gives %d", w, len(got), len(want))
		}
		if !sameMultiset(got, want) {
			t.Errorf("window %v: records differ from the sorted input's", w)
		}
	}
	if n, _ := s.Retained(); n != added {
		t.Errorf("%d records kept, %d added", n, added)
	}
}

// TestCapWithLateSpans: at the per-model cap, late spans (older than every
// record kept) and in-order ones alike leave exactly the newest records.
func TestCapWithLateSpans(t *testing.T) {
	s := NewStore(Limits{Retain: time.Hour, MaxRecords: 100, Now: at(time.Hour)})
	var spans []Span
	for i := range 300 {
		spans = append(spans, span(fmt.Sprint(i), time.Duration(i)*time.Second, 1))
	}
	slices.Reverse(spans[100:200]) // late arrivals in the middle
	s.Add(spans[100:])
	s.Add(spans[:100]) // older than everything kept
	sel := s.Select("gpu0", "m", false, t0.Add(-time.Second), t0.Add(time.Hour))
	if len(sel.All) != 100 {
		t.Fatalf("%d records kept, cap 100", len(sel.All))
	}
	if n, _ := s.Retained(); n != 100 {
		t.Errorf("Retained = %d, cap 100", n)
	}
	oldest := s.Select("gpu0", "m", false, t0.Add(199*time.Second), t0.Add(time.Hour))
	if len(oldest.All) != 100 {
		t.Errorf("%d of the 100 newest records kept", len(oldest.All))
	}
}

// sameMultiset compares two selections as multisets of E2E values (the
// order among records ending at the same instant is not specified).
func sameMultiset[T any](a, b []T) bool {
	key := func(v T) string { return fmt.Sprintf("%v", v) }
	count := map[string]int{}
	for _, v := range a {
		count[key(v)]++
	}
	for _, v := range b {
		count[key(v)]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}
