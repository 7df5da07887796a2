package slo

import (
	"math"
	"testing"
)

func TestBurnRate(t *testing.T) {
	tests := []struct {
		name string
		all  Bounded
		goal float64
		want Bounded
		ok   bool
	}{
		{"pessimistic upper from lower attainment", Bounded{0.98, 0.97, 0.99}, 0.99, Bounded{2, 1, 3}, true},
		{"perfect", Exact(1), 0.99, Exact(0), true},
		{"on budget", Exact(0.9), 0.9, Exact(1), true},
		{"goal 1 is undefined", Exact(0.9), 1, Bounded{}, false},
		{"goal 0 is undefined", Exact(0.9), 0, Bounded{}, false},
		{"goal NaN", Exact(0.9), math.NaN(), Bounded{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := BurnRate(tt.all, tt.goal)
			if ok != tt.ok || (ok && !nearB(got, tt.want)) {
				t.Errorf("BurnRate = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestErrorBudgetRemaining(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		all  Bounded
		goal float64
		want Bounded
	}{
		{"overspent twice at worst", Bounded{0.98, 0.97, 0.99}, 0.99, Bounded{-1, -2, 0}},
		{"untouched", Exact(1), 0.99, Exact(1)},
		{"half spent", Exact(0.995), 0.99, Exact(0.5)},
		{"bad goal", Exact(1), 1.5, Bounded{nan, nan, nan}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorBudgetRemaining(tt.all, tt.goal); !nearB(got, tt.want) {
				t.Errorf("ErrorBudgetRemaining = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCostPerMillion(t *testing.T) {
	perSecond := 2.0 / 3600 * 1e6
	tests := []struct {
		name   string
		hourly float64
		rate   Bounded
		want   Bounded
		ok     bool
	}{
		{"bounds invert", 2, Bounded{100, 50, 200}, Bounded{perSecond / 100, perSecond / 200, perSecond / 50}, true},
		{"exact throughput", 2, Exact(100), Exact(perSecond / 100), true},
		{"zero lower rate: unbounded cost", 2, Bounded{10, 0, 20}, Bounded{perSecond / 10, perSecond / 20, inf}, true},
		{"free", 0, Exact(100), Exact(0), true},
		{"no tokens", 2, Exact(0), Bounded{}, false},
		{"negative cost", -1, Exact(100), Bounded{}, false},
		{"NaN cost", math.NaN(), Exact(100), Bounded{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := CostPerMillion(tt.hourly, tt.rate)
			if ok != tt.ok || (ok && !nearB(got, tt.want)) {
				t.Errorf("CostPerMillion = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
