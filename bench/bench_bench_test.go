package bench

import (
	"testing"
	"time"
)

// benchShapes are the expositions of the per-scrape benchmarks.
var benchShapes = []struct {
	name  string
	shape Shape
}{
	{"realistic", Realistic},
	{"large", Large},
}

// BenchmarkPerScrape compares, per exposition, the textparse floor, our
// Parse, the expfmt alternative and the daemon's whole per-scrape work.
// `go run ./bench/cmd/perf scrape` prints the same as a table with medians.
func BenchmarkPerScrape(b *testing.B) {
	for _, bs := range benchShapes {
		body, ct, err := Body(bs.shape, 10*time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range ParseCases(body, ct) {
			b.Run(bs.name+"/"+c.Name, c.Run)
		}
		sc, st, err := NewWarmScraper(bs.shape, DefaultWorkload())
		if err != nil {
			b.Fatal(err)
		}
		c := FullCase(sc, st)
		b.Run(bs.name+"/"+c.Name, c.Run)
	}
}
