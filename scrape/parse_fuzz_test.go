package scrape

import (
	"math"
	"testing"
)

// FuzzParse feeds arbitrary bodies and content types to Parse. It must never
// panic, must return either a snapshot or an error, and every histogram it
// returns must be valid with sane values. The seed corpus is under
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("vllm:num_requests_running{model_name=\"m\"} 1\n"), "")
	f.Add([]byte(hist(ttftName, "m", "0", []string{"0.1", "1", "+Inf"}, []string{"1", "2", "3"}, "1.5")), ctText004)
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		s, err := Parse(body, contentType, VLLM, scrapeTime)
		if (s == nil) == (err == nil) {
			t.Fatalf("snapshot %v and error %v: want exactly one", s, err)
		}
		if err != nil {
			if r := FailureReason(err); r == ReasonUnknown {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if len(s.Found)+len(s.Missing) != len(VLLM.Families) {
			t.Fatalf("Found %v and Missing %v do not cover the profile", s.Found, s.Missing)
		}
		for model, ms := range s.Models {
			for fam, h := range ms.Histograms {
				if !h.Valid() || math.IsInf(h.Total(), 0) || math.IsNaN(h.Sum) || math.IsInf(h.Sum, 0) {
					t.Fatalf("model %q %s: invalid histogram %+v", model, fam, h)
				}
				for i := 1; i < len(h.Counts); i++ {
					if h.Counts[i] < h.Counts[i-1] {
						t.Fatalf("model %q %s: decreasing counts %v", model, fam, h.Counts)
					}
				}
			}
			for fam, v := range ms.Counters {
				if !(v >= 0) || math.IsInf(v, 1) {
					t.Fatalf("model %q %s: counter %v", model, fam, v)
				}
			}
			for fam, v := range ms.Gauges {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("model %q %s: gauge NaN", model, fam)
				}
			}
		}
	})
}
