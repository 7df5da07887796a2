package scrape

import (
	"errors"
	"io"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// The raw-bytes label scanner must read exactly what the parser reads, or
// decline and leave it to the parser.
func TestScanLabelsAgreesWithParser(t *testing.T) {
	for _, tc := range []struct {
		line  string
		plain bool // the scanner handles it
	}{
		{`vllm:x 1`, true},
		{`vllm:x{} 1`, true},
		{`vllm:x{engine="0",le="0.1",model_name="Qwen/Qwen2.5-7B-Instruct"} 1`, true},
		{`vllm:x{model_name="m",engine="0",le="+Inf"} 1`, true},
		{`vllm:x{ model_name = "m" , engine="0", } 1`, true},
		{`vllm:x{model_name="a,b}c=d",engine=""} 1`, true},
		{`vllm:x{model_name="with \"quotes\"",engine="0"} 1`, false},
		{`vllm:x{"model_name"="m"} 1`, false},
		{`vllm:x{model_name="m","odd.label"="v"} 1`, false},
	} {
		t.Run(tc.line, func(t *testing.T) {
			p, err := textparse.New([]byte(tc.line+"\n"), "", labels.NewSymbolTable(), textparse.ParserOptions{FallbackContentType: "text/plain"})
			if p == nil {
				t.Fatal(err)
			}
			for {
				et, err := p.Next()
				if errors.Is(err, io.EOF) {
					t.Fatal("no series")
				}
				if err != nil {
					t.Fatal(err)
				}
				if et == textparse.EntrySeries {
					break
				}
			}
			series, _, _ := p.Series()
			got, plain := scanLabels(series, nil)
			if plain != tc.plain {
				t.Fatalf("scanLabels handled it: %v, want %v", plain, tc.plain)
			}
			var ls labels.Labels
			p.Labels(&ls)
			want := fromLabelSet(ls, nil)
			if !plain {
				return
			}
			sortLabels(got)
			sortLabels(want)
			if describe(got) != describe(want) || len(got) != len(want) {
				t.Errorf("scanner read %s, parser %s", describe(got), describe(want))
			}
		})
	}
}

// A child written once in the plain form and once with quoted label names is
// the same series.
func TestParseDuplicateAcrossForms(t *testing.T) {
	body := "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 1\n" +
		"vllm:num_requests_running{\"engine\"=\"0\",\"model_name\"=\"m\"} 1\n"
	_, err := Parse([]byte(body), "", VLLM, scrapeTime)
	if FailureReason(err) != ReasonDuplicateSeries {
		t.Fatalf("err %v, want a duplicate series", err)
	}
}

// Escaped label values take the parser's path and keep their unescaped value.
func TestParseEscapedModelName(t *testing.T) {
	body := "vllm:num_requests_running{model_name=\"my \\\"best\\\" model\"} 2\n"
	s, err := Parse([]byte(body), "", VLLM, scrapeTime)
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Models[`my "best" model`]; m == nil || m.Gauges[Running] != 2 {
		t.Errorf("models %v", keys(s.Models))
	}
}

// FuzzScanLabels checks the scanner against the parser on arbitrary lines.
func FuzzScanLabels(f *testing.F) {
	f.Add(`vllm:x{model_name="m",engine="0",le="+Inf"} 1`)
	f.Add(`vllm:x{ model_name = "m" , engine="0", } 1`)
	f.Add(`vllm:x{"model_name"="m"} 1`)
	f.Fuzz(func(t *testing.T, line string) {
		p, _ := textparse.New([]byte(line+"\n"), "", labels.NewSymbolTable(), textparse.ParserOptions{FallbackContentType: "text/plain"})
		if p == nil {
			return
		}
		for {
			et, err := p.Next()
			if err != nil {
				return
			}
			if et != textparse.EntrySeries {
				continue
			}
			series, _, _ := p.Series()
			got, plain := scanLabels(series, nil)
			if !plain {
				continue
			}
			var ls labels.Labels
			p.Labels(&ls)
			want := fromLabelSet(ls, nil)
			sortLabels(got)
			sortLabels(want)
			if describe(got) != describe(want) || len(got) != len(want) {
				t.Fatalf("%q: scanner read %s, parser %s", line, describe(got), describe(want))
			}
		}
	})
}
