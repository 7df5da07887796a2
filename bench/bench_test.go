package bench

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// TestParseExpfmtMatchesParse checks that the expfmt alternative extracts
// exactly what scrape.Parse does from the simulator's text formats, so that
// the benchmarks compare equal work.
func TestParseExpfmtMatchesParse(t *testing.T) {
	tests := []struct {
		name  string
		shape Shape
	}{
		{"realistic", Realistic},
		{"three engines, two models", Shape{Models: 2, Engines: 3}},
		{"multi-process", Shape{Models: 1, Engines: 2, Style: sim.Style{Format: sim.MultiProcess, APIServers: 3}}},
		{"old names", Shape{Models: 1, Engines: 1, Style: sim.Style{OldNames: true, IntegerLE: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, ct, err := Body(tt.shape, 2*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			want, err := scrape.Parse(body, ct, scrape.VLLM, Epoch)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseExpfmt(body, scrape.VLLM, Epoch)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Models) != tt.shape.Models {
				t.Fatalf("scrape.Parse found %d models, want %d", len(want.Models), tt.shape.Models)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("expfmt snapshot differs from scrape.Parse:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseExpfmtRejectsGarbage(t *testing.T) {
	if _, err := ParseExpfmt([]byte("vllm:x{model_name=\"m\" 1\n"), scrape.VLLM, Epoch); err == nil {
		t.Fatal("want an error for an unterminated label set")
	}
}

func TestFloor(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    int
		wantErr bool
	}{
		{"two series", "# TYPE a counter\na_total 1\nb{x=\"y\"} 2\n", 2, false},
		{"empty", "", 0, false},
		{"broken", "a{x=\"y\" 1\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Floor([]byte(tt.body), "text/plain; version=0.0.4")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && n != tt.want {
				t.Errorf("series = %d, want %d", n, tt.want)
			}
		})
	}
}

// TestFillTimesMatchesFullFill checks that the shortcut used to fill long
// histories leaves as many points per tier as scraping every interval does.
func TestFillTimesMatchesFullFill(t *testing.T) {
	s, err := NewSynth()
	if err != nil {
		t.Fatal(err)
	}
	r := history.NewRetention(time.Hour, 26*time.Hour)
	end := Epoch.Add(40 * time.Hour)
	full := history.New(r)
	for at := end.Add(-r.Longest() - time.Hour); !at.After(end); at = at.Add(Interval) {
		if err := full.Append(s.Snapshot(at)); err != nil {
			t.Fatal(err)
		}
	}
	times := FillTimes(r, end, Interval)
	short := history.New(r)
	for _, at := range times {
		if err := short.Append(s.Snapshot(at)); err != nil {
			t.Fatal(err)
		}
	}
	if len(times) > full.Len()*11/10 {
		t.Errorf("shortcut appended %d scrapes for %d points", len(times), full.Len())
	}
	// Bucket alignment may differ by one point at each tier boundary.
	if d := short.Len() - full.Len(); d < -3 || d > 3 {
		t.Errorf("shortcut holds %d points, full fill %d", short.Len(), full.Len())
	}
	if got, want := short.Oldest(), full.Oldest(); got.Sub(want).Abs() > time.Hour {
		t.Errorf("oldest point %s, full fill %s", got, want)
	}
}

func TestSynthGrows(t *testing.T) {
	s, err := NewSynth()
	if err != nil {
		t.Fatal(err)
	}
	a, b := s.Snapshot(Epoch.Add(time.Hour)), s.Snapshot(Epoch.Add(2*time.Hour))
	for model, mb := range b.Models {
		ma := a.Models[model]
		h1, h2 := ma.Histograms[scrape.TTFT], mb.Histograms[scrape.TTFT]
		if !(h2.Total() > h1.Total()) || h1.Total() != math.Floor(h1.Total()) {
			t.Errorf("TTFT total %v then %v: want whole, growing counts", h1.Total(), h2.Total())
		}
	}
}

func TestScraperEvaluatesEveryWindow(t *testing.T) {
	w := DefaultWorkload()
	sc := NewScraper(w)
	st, err := NewStream(Realistic, 1, Interval, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Warm(st, 20); err != nil {
		t.Fatal(err)
	}
	body, ct, at := st.Next()
	rep, err := sc.Scrape(body, ct, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 1 || len(rep.Targets[0].Models) != 1 {
		t.Fatalf("report has %d targets, want 1 with one model", len(rep.Targets))
	}
	if got := len(rep.Targets[0].Models[0].Windows); got != len(w.Windows) {
		t.Errorf("%d windows evaluated, want %d", got, len(w.Windows))
	}
}

func TestProcStatusBytes(t *testing.T) {
	status := []byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nBad:\tx kB\n")
	tests := []struct {
		key  string
		want uint64
	}{
		{"VmRSS:", 1024 * 1024},
		{"VmHWM:", 2048 * 1024},
		{"Bad:", 0},
		{"Absent:", 0},
	}
	for _, tt := range tests {
		if got := ProcStatusBytes(status, tt.key); got != tt.want {
			t.Errorf("%s = %d, want %d", tt.key, got, tt.want)
		}
	}
}

// TestResetFeed checks the feed of the reset measurement: a normal server
// never restarts, and the other restarts at every scrape after the first,
// with its requests still finishing, so that its windows hold work.
func TestResetFeed(t *testing.T) {
	for _, resets := range []bool{false, true} {
		feed, err := NewResetFeed(resets)
		if err != nil {
			t.Fatal(err)
		}
		p := pipeline.New(ResetSpec())
		var snap *scrape.Snapshot
		const scrapes = 30
		for range scrapes {
			snap = feed.Next()
			if err := p.Ingest(TargetName(0), snap, 0); err != nil {
				t.Fatal(err)
			}
		}
		tr := p.Evaluate(snap.Time).Targets[0]
		want := 0.0
		if resets {
			want = scrapes - 1
		}
		if tr.Resets != want || len(tr.Models) != 1 || len(tr.Models[0].Windows) == 0 {
			t.Fatalf("resets %v: %v resets (want %v), %d models", resets, tr.Resets, want, len(tr.Models))
		}
		if w := tr.Models[0].Windows[0]; !(w.RequestsPerSecond > 0) {
			t.Errorf("resets %v: the %v window finished no request", resets, w.Window.Nominal)
		}
	}
}
