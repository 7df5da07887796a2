package scrape

import (
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"syscall"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

func floorOnce(body []byte) {
	p, _ := textparse.New(body, ctText004, labels.NewSymbolTable(), textparse.ParserOptions{})
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) || err != nil {
			break
		}
		if et == textparse.EntrySeries {
			p.Series()
		}
	}
}

func TestTmpRatio(t *testing.T) {
	for _, f := range []string{"testdata/single_process.txt", "testdata/tmp_real.txt"} {
		body, _ := os.ReadFile(f)
		var ratios []float64
		for r := 0; r < 40; r++ {
			t0 := cpuNow()
			for i := 0; i < 100; i++ {
				floorOnce(body)
			}
			t1 := cpuNow()
			for i := 0; i < 100; i++ {
				if _, err := Parse(body, ctText004, VLLM, scrapeTime); err != nil {
					t.Fatal(err)
				}
			}
			t2 := cpuNow()
			ratios = append(ratios, float64(t2-t1)/float64(t1-t0))
		}
		slices.Sort(ratios)
		t.Logf("%s: ratio min %.2f p25 %.2f median %.2f p75 %.2f", f, ratios[0], ratios[10], ratios[20], ratios[30])
	}
}

func BenchmarkTmpReal(b *testing.B) {
	body, _ := os.ReadFile("testdata/tmp_real.txt")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body, ctText004, VLLM, scrapeTime); err != nil {
			b.Fatal(err)
		}
	}
}

func cpuNow() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
