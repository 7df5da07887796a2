package fleetday

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
)

// t0 is the instant the load tests count back from.
var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// arriving is a 15-second scrape interval ending at end with arrivals
// first tokens.
func arriving(end time.Time, arrivals float64) capacity.Interval {
	return capacity.Interval{Start: end.Add(-15 * time.Second), End: end, FirstTokens: arrivals}
}

// TestPooledLoadCountsReplicasForWhatTheyServed: a model at 6 req/s
// served by three replicas at every instant: two all along, one removed 4
// minutes ago and one added then in its place. The pooled rate is 6, where
// the sum of the replicas' own rates over what each served is not.
func TestPooledLoadCountsReplicasForWhatTheyServed(t *testing.T) {
	now := t0.Add(time.Hour)
	var ivs []capacity.Interval
	var perOwn float64 // each replica's own rate over the intervals it served in the span, summed
	for r := range 4 {
		var arr, secs float64
		for k := range 240 { // the last hour, oldest first
			end := now.Add(-time.Duration(239-k) * 15 * time.Second)
			age := now.Sub(end)
			if serving := []bool{true, true, age < 4*time.Minute, age >= 4*time.Minute}[r]; !serving {
				continue
			}
			ivs = append(ivs, arriving(end, 2*15))
			if age < 10*time.Minute {
				arr, secs = arr+2*15, secs+15
			}
		}
		perOwn += arr / secs
	}
	l := pooledLoad(ivs, now, 10*time.Minute, 30*time.Minute, 2*time.Minute)
	if math.Abs(l.Rate-6) > 1e-12 || math.Abs(l.Trend) > 1e-12 || l.Span != 10*time.Minute {
		t.Fatalf("pooled %+v, want 6 req/s, no trend", l)
	}
	if math.Abs(perOwn-6) < 1 {
		t.Fatalf("the replicas' own rates sum to %v: the case does not show what pooling fixes", perOwn)
	}
}

// TestPooledLoadTrend: a rate rising 0.001 req/s per second gives that
// slope, over the bins the history covers (a history of 5 minutes has 2
// whole bins: no trend), and the rate over the span is the mean's.
func TestPooledLoadTrend(t *testing.T) {
	now := t0.Add(time.Hour)
	var ivs []capacity.Interval
	for k := range 240 {
		end := now.Add(-time.Duration(239-k) * 15 * time.Second)
		mid := end.Add(-7500 * time.Millisecond)
		ivs = append(ivs, arriving(end, 15*(10+0.001*mid.Sub(now).Seconds())))
	}
	l := pooledLoad(ivs, now, 10*time.Minute, 30*time.Minute, 2*time.Minute)
	if math.Abs(l.Trend-0.001) > 1e-12 {
		t.Fatalf("trend %v, want 0.001", l.Trend)
	}
	if want := 10 - 0.001*300; math.Abs(l.Rate-want) > 1e-9 || math.Abs(l.Now()-10) > 1e-9 {
		t.Fatalf("rate %v (now %v), want %v (now 10)", l.Rate, l.Now(), want)
	}
	short := pooledLoad(ivs[len(ivs)-20:], now, 10*time.Minute, 30*time.Minute, 2*time.Minute)
	if short.Trend != 0 || math.Abs(short.Rate-(10-0.001*150)) > 1e-9 {
		t.Fatalf("5 minutes of history: %+v, want no trend and the rate over those 5 minutes", short)
	}
}
