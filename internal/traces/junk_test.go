package traces

import (
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"
)

var junkRun = flag.Bool("traces.junk", false, "run the junk-model harness (2.4 M records from 100 models, about 250 MB; figures in the log)")

// TestJunkModelsExpire is the harness behind RELIABILITY.md's figure for
// span records from junk models (outside the main suite: -traces.junk). On a
// virtual clock, 100 junk model names send 24,100 spans each over 7 minutes
// (2.41 M records) to a store with the daemon's defaults but a 7m
// retention; then no span arrives. The bytes retained and the heap are
// logged at the last span, 9 minutes and an hour after it, and must be
// zero from 9 minutes on: records expire by the clock and free the models.
//
//	go test ./internal/traces -run TestJunkModelsExpire -traces.junk -v
func TestJunkModelsExpire(t *testing.T) {
	if !*junkRun {
		t.Skip("junk-model harness: run with -traces.junk")
	}
	for _, targetCap := range []int{0, 1000000} {
		t.Run(fmt.Sprintf("target cap %d", targetCap), func(t *testing.T) { junkModels(t, targetCap) })
	}
}

func junkModels(t *testing.T, targetCap int) {
	const models, perModel = 100, 24100
	c := &clock{t0}
	s := NewStore(Limits{Retain: 7 * time.Minute, MaxRecords: 500000, MaxTargetRecords: targetCap, MaxModels: 100, MaxAdapters: 100, Now: c.Now})
	batch := make([]Span, 0, models)
	step := 7 * time.Minute / perModel
	for i := range perModel {
		c.now = t0.Add(time.Duration(i) * step)
		batch = batch[:0]
		for m := range models {
			sp := span(fmt.Sprint(i), time.Duration(i)*step, 1)
			sp.Model = fmt.Sprintf("junk-%03d", m)
			batch = append(batch, sp)
		}
		if out := s.Add(batch); out.Added != models {
			t.Fatalf("Add = %+v", out)
		}
	}
	last := c.now
	for _, after := range []time.Duration{0, 9 * time.Minute, time.Hour} {
		c.now = last.Add(after)
		records, bytes := s.Retained()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Logf("%v after the last span: %d records, %d retained bytes, %d models, heap %.1f MB", after, records, bytes, s.Models("gpu0"), float64(ms.HeapAlloc)/1e6)
		if after > 7*time.Minute && (records != 0 || bytes != 0 || s.Models("gpu0") != 0) {
			t.Errorf("%v after the last span with a 7m retention: %d records, %d bytes, %d models kept", after, records, bytes, s.Models("gpu0"))
		}
	}
}
