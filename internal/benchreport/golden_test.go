package benchreport

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// seedOptions are the seed example's objectives: TTFT <= 500 ms, TPOT <= 50 ms.
func seedOptions() Options {
	return Options{Bench: []string{"testdata/seed.json"}, Goodput: []string{"ttft:500", "tpot:50"}, GPUHourlyCost: 2}
}

// TestSeedExample checks the numbers: throughput 14/1.10 s = 12.73
// tok/s, goodput 11/1.10 s = 10.00 tok/s (A and B good, C's TTFT 0.70 s too
// slow; A's TPOT is exactly 50 ms and counts as good) and 2/1.10 = 1.82 req/s.
func TestSeedExample(t *testing.T) {
	out, err := Build(context.Background(), seedOptions())
	if err != nil {
		t.Fatal(err)
	}
	p := out.Sweep.Points[0]
	checks := []struct {
		name string
		got  string
		want string
	}{
		{"output throughput", fmt.Sprintf("%.2f", p.OutputThroughput), "12.73"},
		{"goodput tok/s", fmt.Sprintf("%.2f", p.Goodput.TokensPerSecond), "10.00"},
		{"goodput req/s", fmt.Sprintf("%.2f", p.Goodput.RequestsPerSecond), "1.82"},
		{"good tokens", fmt.Sprint(p.Goodput.GoodTokens, "/", p.TotalOutput), "11/14"},
		{"good requests", fmt.Sprint(p.Goodput.GoodRequests), "2"},
		{"request throughput", fmt.Sprintf("%.2f", p.RequestThroughput), "2.73"},
		{"TTFT mean", fmt.Sprintf("%.3f", p.TTFT.Mean), "0.467"},
		{"TPOT mean", fmt.Sprintf("%.4f", p.TPOT.Mean), "0.0633"},
		{"TTFT median (linear)", fmt.Sprintf("%.2f", p.TTFT.Median), "0.50"},
		{"TTFT p99 (linear: 0.5 + 0.98·0.2)", fmt.Sprintf("%.3f", mustValue(t, p.TTFT, 99)), "0.696"},
		{"Little λ·W = 2.0 s / 1.1 s", fmt.Sprintf("%.4f", p.Concurrency.Little), "1.8182"},
		{"measured mean over 0..1.1 s", fmt.Sprintf("%.4f", p.Concurrency.Measured), "1.8182"},
		{"peak", fmt.Sprint(p.Concurrency.Peak), "3"},
		{"cost per 1M output tokens", fmt.Sprintf("%.2f", float64(p.Cost.ThroughputBasis)), "43.65"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}

	nearest := seedOptions()
	nearest.Rank = "nearest"
	out, err = Build(context.Background(), nearest)
	if err != nil {
		t.Fatal(err)
	}
	if v := mustValue(t, out.Sweep.Points[0].TTFT, 99); v != 0.70 {
		t.Errorf("nearest-rank TTFT p99 = %v, want 0.70 (the seed's convention)", v)
	}
}

func mustValue(t *testing.T, s Stat, p float64) float64 {
	t.Helper()
	v, ok := s.Value(p)
	if !ok {
		t.Fatalf("percentile %v not computed in %+v", p, s)
	}
	return v
}

// TestSeedGolden pins the three output formats of the seed example.
func TestSeedGolden(t *testing.T) {
	for _, format := range []struct{ name, file string }{{"text", "seed.txt"}, {"markdown", "seed.md"}, {"json", "seed.golden.json"}} {
		t.Run(format.name, func(t *testing.T) {
			opts := seedOptions()
			opts.Format = format.name
			var buf bytes.Buffer
			if err := Run(context.Background(), opts, &buf); err != nil {
				t.Fatal(err)
			}
			golden(t, format.file, buf.Bytes())
		})
	}
}
