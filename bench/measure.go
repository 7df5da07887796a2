package bench

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// Case is one benchmarked operation.
type Case struct {
	Name string
	Run  func(b *testing.B)
}

// Case names shared by the benchmarks and the perf tables.
const (
	CaseFloor  = "textparse floor"
	CaseParse  = "scrape.Parse"
	CaseExpfmt = "expfmt extraction"
	CaseFull   = "full scrape"
)

// ParseCases are the three ways of reading body: the textparse floor, our
// Parse, and the expfmt alternative.
func ParseCases(body []byte, contentType string) []Case {
	return []Case{
		{CaseFloor, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Floor(body, contentType); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{CaseParse, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := scrape.Parse(body, contentType, scrape.VLLM, Epoch); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{CaseExpfmt, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := ParseExpfmt(body, scrape.VLLM, Epoch); err != nil {
					b.Fatal(err)
				}
			}
		}},
	}
}

// FullCase is the daemon's whole per-scrape work (parse, append, evaluate
// every window) on successive bodies of st, fed to a warmed scraper. Making
// the next body (running the simulator) is not timed.
func FullCase(sc *Scraper, st *Stream) Case {
	return Case{CaseFull, func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			body, ct, at := st.Next()
			b.StartTimer()
			if _, err := sc.Scrape(body, ct, at); err != nil {
				b.Fatal(err)
			}
		}
	}}
}

// WarmScrapes is how many scrapes fill a one-hour window (and its slack).
const WarmScrapes = int((time.Hour + 5*time.Minute) / Interval)

// NewWarmScraper returns a scraper evaluating w and a stream of shape s
// after enough scrapes that every window up to an hour is full.
func NewWarmScraper(s Shape, w Workload) (*Scraper, *Stream, error) {
	st, err := NewStream(s, 1, Interval, 10*time.Minute)
	if err != nil {
		return nil, nil, err
	}
	sc := NewScraper(w)
	if err := sc.Warm(st, WarmScrapes); err != nil {
		return nil, nil, fmt.Errorf("warm %s: %w", s, err)
	}
	return sc, st, nil
}

// Sample is one benchmark result.
type Sample struct {
	NsPerOp     float64
	AllocsPerOp int64
	BytesPerOp  int64
}

// Measure runs every case once per run, the cases of one run back to back,
// so that ratios between cases can be taken within a run on a noisy machine.
func Measure(runs int, cases []Case) (map[string][]Sample, error) {
	out := map[string][]Sample{}
	for range runs {
		for _, c := range cases {
			r := testing.Benchmark(c.Run)
			if r.N == 0 {
				return nil, fmt.Errorf("benchmark %q failed", c.Name)
			}
			out[c.Name] = append(out[c.Name], Sample{
				NsPerOp:     float64(r.T.Nanoseconds()) / float64(r.N),
				AllocsPerOp: r.AllocsPerOp(),
				BytesPerOp:  r.AllocedBytesPerOp(),
			})
		}
	}
	return out, nil
}

// Median is the median of xs (0 when empty).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// MedianNs is the median time per operation of samples.
func MedianNs(samples []Sample) float64 {
	xs := make([]float64, len(samples))
	for i, s := range samples {
		xs[i] = s.NsPerOp
	}
	return Median(xs)
}

// MedianRatio is the median over runs of a's time divided by b's time in the
// same run.
func MedianRatio(a, b []Sample) float64 {
	n := min(len(a), len(b))
	xs := make([]float64, 0, n)
	for i := range n {
		if b[i].NsPerOp > 0 {
			xs = append(xs, a[i].NsPerOp/b[i].NsPerOp)
		}
	}
	return Median(xs)
}
