package history

import (
	"math"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// byteReader hands out fuzz bytes, zeros once they run out.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) next() int {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return int(r.b[r.i-1])
}

// refPoint is one accepted scrape in the fuzz reference model.
type refPoint struct {
	t     time.Time
	seg   int
	total float64 // TTFT +Inf count
}

// refModel mirrors Prometheus increase() semantics independently of the
// history's storage: a new segment when created changes, buckets change or
// any value drops.
type refModel struct {
	points  []refPoint
	last    sample
	created float64
}

func (m *refModel) add(t time.Time, s sample) {
	seg := 0
	if n := len(m.points); n > 0 {
		seg = m.points[n-1].seg
		l := m.last
		restart := s.created != 0 && m.created != 0 && math.Abs(s.created-m.created) >= 1 ||
			!reflect.DeepEqual(l.ttft.Edges, s.ttft.Edges) || s.ttft.Sum < l.ttft.Sum ||
			s.gen < l.gen || s.prompt < l.prompt || s.req < l.req
		for i := range s.ttft.Counts {
			restart = restart || (!reflect.DeepEqual(l.ttft.Edges, s.ttft.Edges) || s.ttft.Counts[i] < l.ttft.Counts[i])
		}
		if restart {
			seg++
			m.created = 0
		}
	}
	if m.created == 0 {
		m.created = s.created
	}
	m.points = append(m.points, refPoint{t: t, seg: seg, total: s.ttft.Total()})
	m.last = s
}

// increase is the reset-aware TTFT increase over (start, end], both being
// times of points.
func (m *refModel) increase(start, end time.Time) float64 {
	i0 := sort.Search(len(m.points), func(i int) bool { return !m.points[i].t.Before(start) })
	total := 0.0
	for i := i0 + 1; i < len(m.points) && !m.points[i].t.After(end); i++ {
		if m.points[i].seg == m.points[i-1].seg {
			total += m.points[i].total - m.points[i-1].total
		} else {
			total += m.points[i].total
		}
	}
	return total
}

var fuzzLayouts = [][]float64{edges3, {0.1, 0.25, 0.5, 1, inf}, {0.5, inf}}

var fuzzRetention = Retention{Tiers: []Tier{{0, 2 * time.Minute}, {time.Minute, 10 * time.Minute}, {5 * time.Minute, time.Hour}}}

// checkWindow asserts the invariants every window must keep.
func checkWindow(t *testing.T, w slo.Window) {
	t.Helper()
	if !w.Start.Before(w.End) {
		t.Fatalf("window (%v, %v] is empty", w.Start, w.End)
	}
	hists := []slo.Histogram{}
	for _, h := range w.Latency {
		hists = append(hists, h)
	}
	for _, h := range hists {
		if !h.Valid() || h.Sum < 0 || math.IsNaN(h.Sum) {
			t.Fatalf("invalid histogram %+v", h)
		}
	}
	for _, v := range []float64{w.GenerationTokensTotal, w.PromptTokensTotal, w.RequestSuccess} {
		if v < 0 || math.IsNaN(v) {
			t.Fatalf("counter increase %v", v)
		}
	}
	for _, g := range []slo.Gauge{w.Running, w.Waiting} {
		if g.Known && (math.IsNaN(g.Mean) || g.Mean > g.Max || g.AtStart > g.Max || g.AtEnd > g.Max) {
			t.Fatalf("gauge %+v inconsistent", g)
		}
	}
}

func FuzzAppendWindow(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{20, 1, 0, 3, 5, 20, 1, 0, 4, 6, 20, 1, 1, 0, 0, 20, 3, 2, 9, 9})
	f.Add([]byte{255, 255, 0, 0, 255, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{b: data}
		full, thin := New(keepAll), New(fuzzRetention)
		refs := map[string]*refModel{"a": {}, "b": {}}
		state := map[string]*sample{}
		now := t0
		for step := 0; step < 200 && r.i < len(r.b); step++ {
			now = now.Add(time.Duration(r.next()%60-5) * time.Second)
			snap := &scrape.Snapshot{Time: now, Models: map[string]*scrape.ModelSample{}}
			next := map[string]sample{}
			for _, name := range []string{"a", "b"} {
				op := r.next()
				if op&1 == 0 {
					continue // model absent from this scrape
				}
				cur := state[name]
				layout := fuzzLayouts[(op>>1)%3]
				s := sample{running: float64(r.next()%7) - 1, waiting: float64(r.next()%3) - 1}
				switch {
				case cur == nil || (op>>3)%8 == 0: // (re)start: small values
					s.ttft = slo.Histogram{Edges: layout, Counts: make([]float64, len(layout))}
					s.created = float64(now.Unix() - int64(r.next()%30))
				default:
					s.ttft = slo.Histogram{Edges: cur.ttft.Edges, Counts: append([]float64(nil), cur.ttft.Counts...), Sum: cur.ttft.Sum}
					s.gen, s.prompt, s.req, s.created = cur.gen, cur.prompt, cur.req, cur.created
					if (op>>3)%8 == 1 {
						s.created = 0 // created no longer exposed
					}
				}
				c := 0.0
				for i := range s.ttft.Counts {
					c += float64(r.next() % 4)
					s.ttft.Counts[i] += c
				}
				s.ttft.Sum += c * 0.3
				s.gen += float64(r.next())
				s.prompt += float64(r.next() % 3)
				s.req += c
				if (op>>6)%4 == 3 {
					s.ttft.Counts[0] = math.NaN() // an unusable scrape
				}
				snap.Models[name] = s.model()
				next[name] = s
			}
			errFull, errThin := full.Append(snap), thin.Append(snap)
			if (errFull == nil) != (errThin == nil) {
				t.Fatalf("append disagrees: %v / %v", errFull, errThin)
			}
			if errFull != nil {
				continue
			}
			for name, s := range next {
				s := s
				state[name] = &s
				refs[name].add(now, s)
			}
		}
		if full.Len() > 0 && thin.Len() > full.Len() {
			t.Fatalf("thinned history holds %d points, more than %d", thin.Len(), full.Len())
		}
		for _, name := range thin.Models() {
			for _, back := range []time.Duration{0, 17 * time.Second, 3 * time.Minute} {
				for _, length := range []time.Duration{30 * time.Second, 2 * time.Minute, 15 * time.Minute, 2 * time.Hour} {
					end := thin.Newest().Add(-back)
					wf, okf := full.Window(name, end, length, Options{})
					if okf {
						checkWindow(t, wf)
						want := refs[name].increase(wf.Start, wf.End)
						if got := wf.Latency[slo.TTFT].Total(); got != want {
							t.Fatalf("%s (%v, %v]: +Inf increase %v, reference %v", name, wf.Start, wf.End, got, want)
						}
						ww, ok := full.Window(name, end, length, Options{Warmup: 45 * time.Second})
						if !ok || ww.Latency[slo.TTFT].Total() > wf.Latency[slo.TTFT].Total() {
							t.Fatalf("warm-up window counts more (%v) than the plain one (%v)", ww.Latency[slo.TTFT].Total(), wf.Latency[slo.TTFT].Total())
						}
						checkWindow(t, ww)
					}
					wt, okt := thin.Window(name, end, length, Options{})
					if !okt {
						continue
					}
					checkWindow(t, wt)
					wt2, _ := thin.Window(name, end, length, Options{Warmup: 45 * time.Second})
					checkWindow(t, wt2)
					same, _ := full.Window(name, wt.End, wt.End.Sub(wt.Start), Options{})
					same.Nominal = wt.Nominal
					if !reflect.DeepEqual(same, wt) {
						t.Fatalf("%s: thinned window\n%+v\ndiffers from the full one\n%+v", name, wt, same)
					}
				}
			}
		}
	})
}
