package reliability

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
)

// recordDir selects TestWriteHeapRecordings: the directory it writes the
// recordings of the heap patterns to, for measuring `replay`'s peak RSS.
var recordDir = flag.String("reliability.record", "", "write recordings of the heap patterns (normal, reset, layout; 1, 2, 3 and 7 days of 15 s scrapes) to this directory")

// TestWriteHeapRecordings writes, when -reliability.record is set, one
// recording per pattern of TestPipelineHeapBounded and length (1, 2, 3 and 7
// days of 15 s scrapes of target "gpu0", the exposition the heap test's
// target serves), so that the binary's peak memory can be measured with
// `/usr/bin/time -f %M vllm-slo-exporter replay` (RELIABILITY.md).
func TestWriteHeapRecordings(t *testing.T) {
	if *recordDir == "" {
		t.Skip("-reliability.record not set")
	}
	for _, pat := range []heapPattern{patternNormal, patternReset, patternLayout} {
		for _, days := range []int{1, 2, 3, 7} {
			path := filepath.Join(*recordDir, fmt.Sprintf("%s-%dd.jsonl.gz", [...]string{"normal", "reset", "layout"}[pat], days))
			w, err := recording.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			src := &heapTarget{pattern: pat, s: newSynth("heap", uint64(pat)+1, rigStart, false)}
			now := rigStart
			for range days * int(24*time.Hour/rigInterval) {
				now = now.Add(rigInterval)
				e := recording.Entry{Time: now, Target: "gpu0", Status: 200, ContentType: "text/plain; version=0.0.4", Body: string(src.body(now))}
				if err := w.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
