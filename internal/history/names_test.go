package history

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// TestModelNamesCounted: a model's name counts against the memory limit
// (a target chooses it, up to scrape.MaxLabelValueLength bytes): the same
// data under a kilobyte name reads exactly that many bytes more, the
// running total equals a recount, and forgetting the model gives it back.
func TestModelNamesCounted(t *testing.T) {
	long := strings.Repeat("m", scrape.MaxLabelValueLength)
	usage := func(name string) (*History, int64) {
		h := New(NewRetention(time.Hour, 24*time.Hour))
		g := newSynthetic(2, 0)
		for i := range 20 {
			s := g.next(at(float64(15 * i)))
			s.Models = map[string]*scrape.ModelSample{name: s.Models["m"]}
			if err := h.Append(s); err != nil {
				t.Fatal(err)
			}
		}
		checkRecount(t, h)
		return h, h.Usage().Bytes
	}
	_, short := usage("m")
	h, longBytes := usage(long)
	if got, want := longBytes-short, int64(len(long)-1); got != want {
		t.Errorf("a %d-byte model name reads %d bytes more than a 1-byte one, want %d", len(long), got, want)
	}
	h.Forget(long)
	if got := h.Usage().Bytes; got != 0 {
		t.Errorf("%d bytes held after forgetting the only model, want 0", got)
	}
}
