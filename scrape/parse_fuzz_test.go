package scrape

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bodies and content types to Parse. It must never
// panic, must return either a snapshot or an error, every error must be
// classified and located, every rejected model must be absent, every line
// number must point at its entry, no model name kept or rejected may be over
// MaxLabelValueLength, and every histogram it returns must be valid with
// sane values. The seed corpus is under testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("vllm:num_requests_running{model_name=\"m\"} 1\n"), "")
	f.Add([]byte(hist(ttftName, "m", "0", []string{"0.1", "1", "+Inf"}, []string{"1", "2", "3"}, "1.5")), ctText004)
	f.Add([]byte(hist(ttftName, "a", "0", []string{"0.1", "+Inf"}, []string{"1", "2"}, "1")+hist(ttftName, "b", "0", []string{"0.1"}, []string{"1"}, "1")), ctText004)
	f.Add([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"a\"} 1\nvllm:num_requests_running{model_name=\"b\"} NaN\n# EOF\n"), ctOM)
	f.Add([]byte("vllm:num_requests_running{model_name=\"a\"} 1\nvllm:num_requests_running{model_name=\""+strings.Repeat("\u00e9", MaxLabelValueLength/2+1)+"\"} 1\n"), "")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		checkEntryLines(t, body, contentType)
		s, err := Parse(body, contentType, VLLM, scrapeTime)
		if (s == nil) == (err == nil) {
			t.Fatalf("snapshot %v and error %v: want exactly one", s, err)
		}
		if err != nil {
			checkError(t, err, body)
			return
		}
		if len(s.Found)+len(s.Missing) != len(VLLM.Families)-absentOptional(s) {
			t.Fatalf("Found %v and Missing %v do not cover the profile", s.Found, s.Missing)
		}
		for _, r := range s.Rejected {
			if len(r.Model) > MaxLabelValueLength {
				t.Fatalf("rejection names a model of %d bytes", len(r.Model))
			}
			if _, kept := s.Models[r.Model]; kept || !VLLM.Measures(r.Family) || r.Err == nil || r.Err.Model != r.Model {
				t.Fatalf("rejection %+v (%v) with models %v", r, r.Err, keys(s.Models))
			}
			checkError(t, r.Err, body)
		}
		for model, ms := range s.Models {
			if len(model) > MaxLabelValueLength {
				t.Fatalf("model name of %d bytes kept", len(model))
			}
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

// checkError checks that err is classified and that an error about a sample
// names its family and a line of body.
func checkError(t *testing.T, err error, body []byte) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) || FailureReason(err) == ReasonUnknown {
		t.Fatalf("unclassified error %v", err)
	}
	if pe.Line > bytes.Count(body, []byte("\n"))+2 {
		t.Fatalf("error %v: line %d is past the body", err, pe.Line)
	}
	if pe.Reason != ReasonInvalidExposition && (pe.Line <= 0 || pe.Family == "") {
		t.Fatalf("error %v names no line or family", err)
	}
}

// optionalFamilies counts a profile's optional families.
func optionalFamilies(p Profile) int {
	n := 0
	for _, f := range p.Families {
		if f.Family.Optional() {
			n++
		}
	}
	return n
}

// absentOptional counts the optional families of VLLM a snapshot did not
// find: they are in neither Found nor Missing.
func absentOptional(s *Snapshot) int {
	n := 0
	for _, f := range VLLM.Families {
		if _, found := s.Found[f.Family]; f.Family.Optional() && !found {
			n++
		}
	}
	return n
}
