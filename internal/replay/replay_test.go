package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

var start = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func onePipeline() *pipeline.Pipeline {
	return pipeline.New(pipeline.Spec{Targets: []pipeline.TargetSpec{{Name: "gpu0", URL: "http://gpu0/metrics", Profile: scrape.VLLM, Interval: 15 * time.Second}}})
}

// TestUseUnknownTargets replays entries of a target the configuration does
// not name: none is used, and the error names both sides. One entry of the
// configured target makes the replay a good one.
func TestUseUnknownTargets(t *testing.T) {
	p := onePipeline()
	var use Use
	for i := range 3 {
		e := recording.Entry{Time: start.Add(time.Duration(i) * 15 * time.Second), Target: "rtx4090", Error: "boom"}
		if use.Add(e.Target, Ingest(p, e)) {
			t.Errorf("entry %d of an unknown target counted as used", i)
		}
	}
	err := use.Err([]string{"gpu0"})
	if err == nil || !strings.Contains(err.Error(), `recording: ["rtx4090"]`) || !strings.Contains(err.Error(), `configuration: ["gpu0"]`) {
		t.Fatalf("error %v, want one naming both targets", err)
	}
	if use.Unknown["rtx4090"] != 3 {
		t.Errorf("unknown entries %v, want 3 of rtx4090", use.Unknown)
	}
	e := recording.Entry{Time: start.Add(time.Minute), Target: "gpu0", Error: "connection refused"}
	if !use.Add(e.Target, Ingest(p, e)) {
		t.Error("a failed scrape of the configured target is still a used entry")
	}
	if err := use.Err([]string{"gpu0"}); err != nil {
		t.Errorf("error %v after an entry of the configured target", err)
	}
	if err := (Use{}).Err(nil); err == nil {
		t.Error("no error for an empty recording")
	}
}

// TestIngestCountsFailures: a recorded failure and a body that does not
// parse are failures of the target under their reasons, and a good body is
// a good scrape at the recorded time.
func TestIngestCountsFailures(t *testing.T) {
	p := onePipeline()
	body := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 1\n"
	entries := []recording.Entry{
		{Time: start, Target: "gpu0", Error: "connection refused"},
		{Time: start.Add(15 * time.Second), Target: "gpu0", Body: "not an exposition {", ContentType: "text/plain"},
		{Time: start.Add(30 * time.Second), Target: "gpu0", Body: body, ContentType: "text/plain; version=0.0.4"},
	}
	for i, e := range entries {
		if err := Ingest(p, e); (err != nil) != (i < 2) {
			t.Errorf("entry %d: error %v", i, err)
		}
	}
	tr := p.Evaluate(start.Add(time.Minute)).Targets[0]
	if tr.Failures["recorded_error"] != 1 || len(tr.Failures) != 2 {
		t.Errorf("failures %v, want one recorded_error and one parse failure", tr.Failures)
	}
	if !tr.Up || !tr.LastScrape.Equal(entries[2].Time) {
		t.Errorf("up %v at %v, want up at the last entry's time", tr.Up, tr.LastScrape)
	}
}
