package config

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Plausible objective thresholds. A threshold above its metric's bound is
// valid, and evaluated as written, but is most likely milliseconds written
// as seconds (ttft: 500s for 500ms, tpot: 50s for 50ms), which makes every
// request good and the SLO silent. The bounds are far above any interactive
// or batch target:
//   - per-token gaps (tpot, itl): 2s, forty times a slow interactive 50ms;
//   - waits before the first token (ttft, queue, prefill): 2m;
//   - whole requests and their decode (e2e, decode, inference): 2h.
var plausibleThreshold = map[slo.Metric]time.Duration{
	slo.TPOT: 2 * time.Second, slo.ITL: 2 * time.Second,
	slo.TTFT: 2 * time.Minute, slo.Queue: 2 * time.Minute, slo.Prefill: 2 * time.Minute,
	slo.E2E: 2 * time.Hour, slo.Decode: 2 * time.Hour, slo.Inference: 2 * time.Hour,
}

// secondsText writes a threshold of whole seconds as seconds ("500s", as
// it is likely written), others as DurationText does.
func secondsText(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return DurationText(model.Duration(d))
}

// plausibility returns a warning for every objective whose threshold is
// above its metric's plausible bound (plausibleThreshold).
func plausibility(c *Config) []*fieldError {
	var out []*fieldError
	for i, s := range c.SLOs {
		for _, o := range s.ObjectiveList() {
			bound, ok := plausibleThreshold[o.Metric]
			d := time.Duration(s.Objectives[o.Metric])
			if !ok || d <= bound {
				continue
			}
			hint := ""
			if d%time.Second == 0 && d < 10000*time.Second {
				hint = fmt.Sprintf("; if %d milliseconds was meant, write %dms", d/time.Second, d/time.Second)
			}
			out = append(out, errorf(indexPath("slos", i)+".objectives."+string(o.Metric),
				"%s is implausible for %s (over %s, every request would likely meet it)%s", secondsText(d), o.Metric, model.Duration(bound), hint))
		}
	}
	return out
}
