package benchreport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// simEntries records a demo simulator every 15 s for the given time.
func simEntries(t *testing.T, length time.Duration) []recording.Entry {
	t.Helper()
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	s, err := sim.New(sim.DemoConfig(3, start))
	if err != nil {
		t.Fatal(err)
	}
	var out []recording.Entry
	for at := start.Add(15 * time.Second); !at.After(start.Add(length)); at = at.Add(15 * time.Second) {
		s.AdvanceTo(at)
		body, ct := s.Exposition()
		out = append(out, recording.Entry{Time: at, Target: "rec", Status: 200, ContentType: ct, Body: string(body)})
	}
	return out
}

// TestWriteHTML draws a 20-minute recording: one self-contained page with
// the charts' data of the goodput SLO inlined.
func TestWriteHTML(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.html")
	objs, err := ParseGoodput([]string{"ttft:500", "tpot:50"})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(file, simEntries(t, 20*time.Minute), ServerOptions{Goodput: objs, Quantiles: []float64{0.5, 0.99}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{`class="series-data"`, `"name":"goodput"`, `"goal":0.99`, `"window":"1m"`, `"long":"5m"`, sim.DemoModel, "uPlot"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `src="/`) || strings.Contains(page, `href="/assets`) {
		t.Error("page needs a server for its assets")
	}
}

// TestHTMLNeedsObjectives: --html without --goodput or without scrapes is a
// clear error before any work.
func TestHTMLNeedsObjectives(t *testing.T) {
	for _, o := range []Options{
		{HTML: "x.html", Recording: "r.jsonl"},
		{HTML: "x.html", Bench: []string{"b.json"}, Goodput: []string{"ttft:500"}},
	} {
		if _, err := Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--html needs") {
			t.Errorf("%+v: error %v", o, err)
		}
	}
	if err := WriteHTML(filepath.Join(t.TempDir(), "x.html"), simEntries(t, time.Minute), ServerOptions{}); err == nil {
		t.Error("WriteHTML without objectives: no error")
	}
}
