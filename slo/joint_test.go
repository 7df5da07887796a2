package slo

import (
	"math"
	"testing"
)

func TestCarryGood(t *testing.T) {
	tests := []struct {
		name                string
		goodA               Bounded
		nA, nB, leftA, join float64
		want                Bounded
	}{
		// |A\B| <= 15; |B\A| <= min(10, 15+90−100) = 5.
		{"gauges bound both sides", Exact(80), 100, 90, 15, 10, Bounded{72, 65, 85}},
		{"unknown gauges: trivial", Exact(80), 100, 90, 100, 90, Bounded{72, 0, 90}},
		{"nothing in A: midpoint", Exact(0), 0, 10, 0, 4, Bounded{2, 0, 4}},
		{"same population, nothing in flight: exact", Bounded{70, 60, 80}, 100, 100, 0, 0, Bounded{70, 60, 80}},
		// |A\B| = |B\A| + 5 <= 0 + 5, so B is inside A, all of it good.
		{"population arithmetic tightens", Exact(10), 10, 5, 10, 0, Exact(5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CarryGood(tt.goodA, tt.nA, tt.nB, tt.leftA, tt.join); !nearB(got, tt.want) {
				t.Errorf("CarryGood = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestJointGood(t *testing.T) {
	tests := []struct {
		name  string
		goods []Bounded
		n     float64
		want  Bounded
	}{
		// Fréchet: [90+80−100, min(90, 80)]; estimate (0.72+0.8)/2·100.
		{"two exact", []Bounded{Exact(90), Exact(80)}, 100, Bounded{76, 70, 80}},
		{"lower bound reaches 0", []Bounded{Exact(30), Exact(40)}, 100, Bounded{21, 0, 30}},
		{"one objective is itself", []Bounded{{50, 40, 60}}, 100, Bounded{50, 40, 60}},
		{"none: all good", nil, 100, Exact(100)},
		{"bracketed inputs", []Bounded{{95, 90, 100}, {85, 80, 90}}, 100, Bounded{(0.95*0.85 + 0.85) / 2 * 100, 70, 90}},
		{"all perfect", []Bounded{Exact(10), Exact(10), Exact(10)}, 10, Exact(10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JointGood(tt.goods, tt.n); !nearB(got, tt.want) {
				t.Errorf("JointGood = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestGoodputTokens(t *testing.T) {
	edges := []float64{10, 100, inf}
	tests := []struct {
		name   string
		joint  Bounded
		tokens Histogram
		want   Bounded
		ok     bool
	}{
		// 2 requests <= 10 tokens, 3 in (10, 100]; 150 tokens; 1 bad. The bad one
		// holds at most 100 (and the 4 others at least 0+0+10+10), at least
		// 150 − most(4) = 150 − 310 < 0, so 0.
		{"one bad", Exact(4), hist(150, edges, 2, 5, 5), Bounded{120, 50, 150}, true},
		// One request in +Inf: the bad one may hold all but the 5 others' minimum.
		{"bad may be in +Inf", Exact(5), hist(1000, edges, 2, 5, 6), Bounded{1000.0 * 5 / 6, 30, 1000}, true},
		{"all good is exact", Exact(5), hist(150, edges, 2, 5, 5), Exact(150), true},
		{"all bad is exact", Exact(0), hist(150, edges, 2, 5, 5), Exact(0), true},
		{"no histogram", Exact(5), Histogram{}, Bounded{}, false},
		{"empty histogram", Exact(0), hist(0, edges, 0, 0, 0), Bounded{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := GoodputTokens(tt.joint, tt.tokens)
			if ok != tt.ok || (ok && !nearB(got, tt.want)) {
				t.Errorf("GoodputTokens = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestInFlight(t *testing.T) {
	r := Gauge{Known: true, AtStart: 3, AtEnd: 4}
	w := Gauge{Known: true, AtStart: 1, AtEnd: 2}
	if s, e, ok := inFlight(r, w); !ok || s != 4 || e != 6 {
		t.Errorf("inFlight = %v, %v, %v; want 4, 6, true", s, e, ok)
	}
	if _, _, ok := inFlight(r, Gauge{}); ok {
		t.Error("inFlight with an unknown gauge is ok")
	}
	if _, _, ok := inFlight(r, Gauge{Known: true, AtStart: math.NaN()}); ok {
		t.Error("inFlight with a NaN gauge is ok")
	}
}

func TestTPOTTokenShare(t *testing.T) {
	// Two fast requests (TPOT 0.02, 101 tokens) and two slow ones (TPOT
	// 0.1, 11 tokens): decode sum 2·100·0.02 + 2·10·0.1 = 6, TPOT sum 0.24.
	// The good bucket's middle is the fast requests' TPOT, so the method of
	// moments recovers their 2 + 200 tokens of 224 exactly, where the count
	// share would give them half.
	tpotEdges, decodeEdges := []float64{0.04, inf}, []float64{1, 3, inf}
	tpot := hist(0.24, tpotEdges, 2, 4)
	decode := hist(6, decodeEdges, 2, 4, 4)
	tests := []struct {
		name         string
		tpot, decode Histogram
		good, n      float64
		total        float64
		want         float64
	}{
		{"slow requests are the short ones", tpot, decode, 2, 4, 224, 202.0 / 224},
		{"one token each: count share", tpot, decode, 2, 4, 4, 0.5},
		{"decode over other requests: count share", tpot, hist(6, decodeEdges, 2, 3, 3), 2, 4, 224, 0.5},
		{"no decode histogram: count share", tpot, Histogram{}, 2, 4, 224, 0.5},
		{"all good: count share", hist(0.08, tpotEdges, 4, 4), decode, 4, 4, 224, 1},
		// TPOT sum too small for the bad bucket to be slower than the good.
		{"classes not apart: count share", hist(0.05, tpotEdges, 2, 4), decode, 2, 4, 224, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tpotTokenShare(0.04, tt.tpot, tt.decode, tt.good, tt.n, tt.total); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("tpotTokenShare = %v, want %v", got, tt.want)
			}
		})
	}
}
