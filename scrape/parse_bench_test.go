package scrape

import (
	"errors"
	"io"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// BenchmarkParse parses a realistic single-process exposition: one model, two
// engines, every V1 family, HELP/TYPE and _created lines, plus unrelated
// families. Compare with BenchmarkTextparseFloor for Parse's own overhead.
func BenchmarkParse(b *testing.B) {
	body := readTestdata(b, "single_process.txt")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body, ctText004, VLLM, scrapeTime); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTextparseFloor only iterates textparse over the same bytes, reading
// each series' raw bytes and value: the floor no parse built on it can beat.
func BenchmarkTextparseFloor(b *testing.B) {
	body := readTestdata(b, "single_process.txt")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := textparse.New(body, ctText004, labels.NewSymbolTable(), textparse.ParserOptions{})
		if p == nil {
			b.Fatal(err)
		}
		for {
			et, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if et == textparse.EntrySeries {
				p.Series()
			}
		}
	}
}
