package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Synth produces snapshots of one model whose cumulative values grow at the
// rates a simulated vLLM server showed, at any virtual time, without running
// the simulator for the whole span: it is how a 30-day history is filled in
// seconds.
type Synth struct {
	model       string
	at          time.Time
	base, slope *scrape.ModelSample // values at `at`, and their increase per second
	created     float64
}

// NewSynth measures a simulated server of one model on two engines over a
// few minutes of virtual time and returns a generator that extrapolates it.
func NewSynth() (*Synth, error) {
	st, err := NewStream(Realistic, 7, 5*time.Minute, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	var snaps [2]*scrape.Snapshot
	for i := range snaps {
		body, ct, at := st.Next()
		if snaps[i], err = scrape.Parse(body, ct, scrape.VLLM, at); err != nil {
			return nil, fmt.Errorf("synth: %w", err)
		}
	}
	model := slices.Collect(maps.Keys(snaps[0].Models))
	if len(model) != 1 {
		return nil, fmt.Errorf("synth: want one model, got %v", model)
	}
	a, b := snaps[0].Models[model[0]], snaps[1].Models[model[0]]
	dt := snaps[1].Time.Sub(snaps[0].Time).Seconds()
	slope := &scrape.ModelSample{Histograms: map[scrape.Family]slo.Histogram{}, Counters: map[scrape.Family]float64{}}
	for f, h := range b.Histograms {
		ha := a.Histograms[f]
		d := slo.Histogram{Edges: h.Edges, Counts: make([]float64, len(h.Counts)), Sum: (h.Sum - ha.Sum) / dt}
		for i := range h.Counts {
			d.Counts[i] = (h.Counts[i] - ha.Counts[i]) / dt
		}
		slope.Histograms[f] = d
	}
	for f, v := range b.Counters {
		slope.Counters[f] = (v - a.Counters[f]) / dt
	}
	return &Synth{model: model[0], at: snaps[1].Time, base: b, slope: slope, created: b.Created}, nil
}

// Snapshot returns the server's state at t (t may be before or after the
// measured span; values never go below zero). Counts are whole numbers, as
// real ones are.
func (s *Synth) Snapshot(t time.Time) *scrape.Snapshot {
	dt := t.Sub(s.at).Seconds()
	ms := &scrape.ModelSample{
		Histograms: make(map[scrape.Family]slo.Histogram, len(s.base.Histograms)),
		Counters:   make(map[scrape.Family]float64, len(s.base.Counters)),
		Gauges:     map[scrape.Family]float64{},
		Created:    s.created,
	}
	grow := func(v, d float64) float64 { return max(0, math.Floor(v+d*dt)) }
	for f, h := range s.base.Histograms {
		d := s.slope.Histograms[f]
		out := slo.Histogram{Edges: h.Edges, Counts: make([]float64, len(h.Counts)), Sum: max(0, h.Sum+d.Sum*dt)}
		for i := range h.Counts {
			out.Counts[i] = grow(h.Counts[i], d.Counts[i])
		}
		ms.Histograms[f] = out
	}
	for f, v := range s.base.Counters {
		ms.Counters[f] = grow(v, s.slope.Counters[f])
	}
	phase := float64(t.Unix()%600) / 600 * 2 * math.Pi
	ms.Gauges[scrape.Running] = math.Round(20 + 10*math.Sin(phase))
	ms.Gauges[scrape.Waiting] = math.Round(max(0, 5*math.Sin(phase)))
	ms.Gauges[scrape.KVCacheUsage] = 0.5
	return &scrape.Snapshot{Time: t, Models: map[string]*scrape.ModelSample{s.model: ms}}
}

// FillTimes are the scrape times that leave a history with retention r in
// the state it would have after scraping every interval up to end for
// r.Longest(): each coarse tier only keeps one point per Step, so it is
// enough to scrape once per Step where that tier's points will sit, and every
// interval in the raw tier. That takes ~1,300 scrapes instead of 170,000
// for a 30-day period.
func FillTimes(r history.Retention, end time.Time, interval time.Duration) []time.Time {
	var out []time.Time
	tiers := r.Tiers
	for k := len(tiers) - 1; k >= 1; k-- {
		from := end.Add(-tiers[k].Keep).Truncate(tiers[k].Step).Add(tiers[k].Step)
		to := end.Add(-tiers[k-1].Keep)
		for t := from; t.Before(to); t = t.Add(tiers[k].Step) {
			out = append(out, t)
		}
	}
	from := end.Add(-tiers[0].Keep)
	if len(out) > 0 {
		from = out[len(out)-1].Add(interval)
	}
	for t := from; !t.After(end); t = t.Add(interval) {
		out = append(out, t)
	}
	return out
}

// Fill ingests a synthetic scrape of every target of p at each of times.
func Fill(p *pipeline.Pipeline, targets int, s *Synth, times []time.Time) error {
	for _, t := range times {
		// One snapshot serves every target of a time: the history copies what
		// it keeps, and Spec sets no model cap, so Ingest never edits it.
		snap := s.Snapshot(t)
		for i := range targets {
			if err := p.Ingest(TargetName(i), snap, 0); err != nil {
				return fmt.Errorf("fill at %s: %w", t.Format(time.RFC3339), err)
			}
		}
	}
	return nil
}

// Memory is what a process holds, read after a full garbage collection.
type Memory struct {
	// HeapAlloc is the Go heap in live objects (runtime.MemStats.HeapAlloc).
	HeapAlloc uint64
	// HeapSys and Sys are the heap and total memory obtained from the OS.
	HeapSys, Sys uint64
	// RSS and HWM are the resident set and its peak (VmRSS, VmHWM), in bytes;
	// 0 where /proc is not available.
	RSS, HWM uint64
}

// ReadMemory runs a garbage collection and reads the process's memory.
func ReadMemory() Memory {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := Memory{HeapAlloc: ms.HeapAlloc, HeapSys: ms.HeapSys, Sys: ms.Sys}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		m.RSS, m.HWM = ProcStatusBytes(b, "VmRSS:"), ProcStatusBytes(b, "VmHWM:")
	}
	return m
}

// ProcStatusBytes reads one "Key:   123 kB" line of /proc/<pid>/status in
// bytes (0 when absent), for memory read from another process.
func ProcStatusBytes(status []byte, key string) uint64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, key) {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, key))
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}
