package pipeline

import (
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestTruncatedWindowJointAgainstTruth: once the memory limit has cut the
// history, a window longer than what it holds starts at its oldest point,
// and the joint of that window must cover exactly the same scrapes (the
// ledger keeps its checkpoints where the history keeps points) with the
// simulator's truth inside its bounds.
func TestTruncatedWindowJointAgainstTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("two simulated hours")
	}
	run := newWorkload(t, "one-engine", 5, []slo.SLO{interactive}, time.Hour, 2*time.Hour)
	s, p := run.sim, run.p
	at := start
	for ; !at.After(start.Add(40 * time.Minute)); at = at.Add(scrapeStep) {
		scrapeInto(t, p, s, at)
	}
	// Limit the history to what 40 minutes of scrapes hold.
	spec := p.Spec()
	spec.HistoryLimit = p.Evaluate(at).Targets[0].History.Bytes
	if err := p.Reconfigure(spec); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for ; !at.After(start.Add(2 * time.Hour)); at = at.Add(scrapeStep) {
		scrapeInto(t, p, s, at)
		if at.Sub(start)%(10*time.Minute) != 0 {
			continue
		}
		tr := p.Evaluate(at).Targets[0]
		if tr.History.DroppedPoints == 0 {
			t.Fatalf("at %v: the limit dropped nothing", at.Sub(start))
		}
		truth := s.Truth()
		for _, w := range tr.Models[0].Windows {
			if cov, _ := w.Window.Coverage(); cov >= 1 {
				t.Errorf("at %v: the %v window covers %v of its length despite the limit", at.Sub(start), w.Window.Nominal, cov)
			}
			j, ok := onlyLedger(p).Window(0, w.Window.Start, w.Window.End)
			if !ok || !j.Start.Equal(w.Window.Start) || !j.End.Equal(w.Window.End) {
				t.Errorf("at %v: the %v window spans (%v, %v], its joint (%v, %v]", at.Sub(start), w.Window.Nominal, w.Window.Start, w.Window.End, j.Start, j.End)
			}
			good := w.SLOs[0].GoodRequests[slo.AllKey]
			wt := truthOf(truth, w.Window.Start, w.Window.End, run.gaps, meetsInteractive)
			if wt.good < good.Lower || wt.good > good.Upper {
				t.Errorf("at %v: %v window: %v good requests outside [%v, %v]", at.Sub(start), w.Window.Nominal, wt.good, good.Lower, good.Upper)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no window checked")
	}
}
