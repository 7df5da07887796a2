package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/recording"
)

// TestRecordedUseUnknownTargets replays entries of a target the
// configuration does not name: none is used, and the error names both sides.
// One entry of the configured target makes the replay a good one.
func TestRecordedUseUnknownTargets(t *testing.T) {
	p := New(testSpec(t))
	var use RecordedUse
	for i := range 3 {
		e := recording.Entry{Time: start.Add(time.Duration(i) * 15 * time.Second), Target: "rtx4090", Error: "boom"}
		if use.Add(e.Target, p.IngestRecorded(e)) {
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
	if !use.Add(e.Target, p.IngestRecorded(e)) {
		t.Error("a failed scrape of the configured target is still a used entry")
	}
	if err := use.Err([]string{"gpu0"}); err != nil {
		t.Errorf("error %v after an entry of the configured target", err)
	}
	if err := (RecordedUse{}).Err(nil); err == nil {
		t.Error("no error for an empty recording")
	}
}
