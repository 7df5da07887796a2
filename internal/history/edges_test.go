package history

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// TestWindowAtItsEdgesIsTheWindow: a window read between the edges Edges
// decides is the window Window answers, field for field, on raw and coarse
// tiers, across restarts and gaps, with and without a warm-up; and Edges
// is false exactly where Window is.
func TestWindowAtItsEdgesIsTheWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	h := New(Retention{Tiers: []Tier{{Step: 0, Keep: 20 * time.Minute}, {Step: time.Minute, Keep: 1000 * time.Hour}}})
	g := &restarting{p: 0.1, whole: true}
	at := t0
	for range 400 {
		at = at.Add(time.Duration(15+15*r.IntN(3)*r.IntN(2)) * time.Second) // now and then a missed scrape
		if err := h.Append(&scrape.Snapshot{Time: at, Models: map[string]*scrape.ModelSample{"m": g.next(r, at)}}); err != nil {
			t.Fatal(err)
		}
	}
	compared := 0
	for range 1000 {
		end := at.Add(-time.Duration(r.IntN(int(3*time.Hour/time.Second))) * time.Second)
		length := time.Duration(r.IntN(int(2*time.Hour/time.Second))) * time.Second
		opts := Options{MaxGap: time.Duration(r.IntN(3)) * 20 * time.Second, Warmup: time.Duration(r.IntN(2)) * time.Minute}
		want, okW := h.Window("m", end, length, opts)
		e, ok := h.Edges("m", end, length, opts)
		if ok != okW {
			t.Fatalf("window ending %v, %v, %+v: edges %v, window %v", end.Sub(t0), length, opts, ok, okW)
		}
		if !ok {
			continue
		}
		got, ok := h.WindowAt("m", e, opts.Warmup)
		if g, w := fmt.Sprintf("%v %+v", ok, got), fmt.Sprintf("true %+v", want); g != w {
			t.Fatalf("window ending %v, %v, %+v:\nbetween its edges %s\nwindow            %s", end.Sub(t0), length, opts, g, w)
		}
		compared++
	}
	if compared < 500 {
		t.Fatalf("only %d windows compared", compared)
	}
}
