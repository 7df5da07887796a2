package otlp_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// checkNotExact fails unless the window's result is not covered, its
// quantiles are exactly the histograms' own, and each SLO bound lies within
// the histograms' (the scrape intervals the spans did cover narrow "all"
// and the good requests: see docs/exact-mode.md).
func checkNotExact(t *testing.T, r *run, model string, wr slo.WindowReport, tr pipeline.ModelReport, i int) {
	t.Helper()
	res := tr.Traces[i]
	if res.Covered {
		t.Errorf("model %s window %v: covered with %d spans for %v finished requests", model, wr.Window.Nominal, res.Spans, res.Finished)
	}
	plain := r.histogramOnly(t, model, wr.Window.Nominal)
	if !reflect.DeepEqual(wr.Quantiles, plain.Quantiles) || len(wr.SLOs) != len(plain.SLOs) {
		t.Errorf("model %s window %v: published numbers differ from the histograms' although the window is not covered", model, wr.Window.Nominal)
	}
	for k := range min(len(wr.SLOs), len(plain.SLOs)) {
		got, want := wr.SLOs[k], plain.SLOs[k]
		for key, b := range want.Objectives {
			if g, ok := got.Objectives[key]; !ok || g.Lower < b.Lower || g.Upper > b.Upper {
				t.Errorf("model %s window %v SLO %s %s: %+v, outside the histograms' %+v", model, wr.Window.Nominal, want.Name, key, g, b)
			}
		}
	}
	if len(res.Adapters) != 0 || res.Calibration.Checked != 0 {
		t.Errorf("model %s window %v: adapters or calibration published over partial data", model, wr.Window.Nominal)
	}
}

// TestSampledSpansFallBackToHistograms: with half of the requests sampled,
// no window is covered; the coverage ratio says about half, and every
// published number is the histograms'.
func TestSampledSpansFallBackToHistograms(t *testing.T) {
	rut := startReceiver(t)
	e := emitter(t, rut.grpcAddr, sim.SpanGRPC, 0.5)
	r := newRun(t, rut.store, e.Hook)
	r.advance(t, 6*time.Minute)
	flush(t, e)
	rep := r.p.Evaluate(r.now)
	var spans, finished float64
	for _, mr := range rep.Targets[0].Models {
		for i, wr := range mr.Windows {
			checkNotExact(t, r, mr.Name, wr, mr, i)
			ratio, ok := mr.Traces[i].Coverage()
			if !ok || !(ratio > 0 && ratio < 1) {
				t.Errorf("model %s window %v: coverage %v (ok %v), want strictly between 0 and 1", mr.Name, wr.Window.Nominal, ratio, ok)
			}
			if wr.Window.Nominal == 5*time.Minute {
				spans += float64(mr.Traces[i].Spans)
				finished += mr.Traces[i].Finished
			}
		}
	}
	// The sampler draws random trace ids, so only the share over many
	// requests is stable: about 0.5, well within 0.35..0.65 for the few
	// hundred requests of the 5m windows.
	t.Logf("%v of %v requests of the 5m windows sampled", spans, finished)
	if share := spans / finished; finished < 200 || share < 0.35 || share > 0.65 {
		t.Errorf("%v of %v requests sampled (%.2f), want about half of at least 200", spans, finished, share)
	}
}

// TestReceiverRestart: the receiver (and its store) restarts after 3
// minutes. Windows reaching before the restart lack spans and stay on the
// histograms; a window entirely after it is exact again.
func TestReceiverRestart(t *testing.T) {
	first := startReceiver(t)
	current := emitter(t, first.grpcAddr, sim.SpanGRPC, 0)
	r := newRun(t, first.store, func(req sim.Request) { current.Hook(req) })
	r.advance(t, 3*time.Minute)
	flush(t, current)
	first.stop()

	second := startReceiver(t)
	current = emitter(t, second.grpcAddr, sim.SpanGRPC, 0)
	r.p.Reconfigure(newSpec(second.store))
	r.advance(t, 3*time.Minute)
	flush(t, current)
	rep := r.p.Evaluate(r.now)
	for _, mr := range rep.Targets[0].Models {
		for i, wr := range mr.Windows {
			switch wr.Window.Nominal {
			case time.Minute:
				if !mr.Traces[i].Covered {
					t.Errorf("model %s: the 1m window after the restart is not covered", mr.Name)
				}
			case 5 * time.Minute:
				checkNotExact(t, r, mr.Name, wr, mr, i)
				if ratio, ok := mr.Traces[i].Coverage(); !ok || ratio >= 1 {
					t.Errorf("model %s: 5m coverage %v across the restart, want < 1", mr.Name, ratio)
				}
			}
		}
	}
}
