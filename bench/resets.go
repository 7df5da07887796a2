package bench

import (
	"fmt"
	"syscall"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// ResetFeed is the scrapes of one target, every Interval from Epoch: a
// server whose values grow as Synth's do, or, with Resets, one whose
// counters restart at every scrape (each snapshot holds only what the last
// interval added, under a new process start time): the worst case of a
// history, where every scrape opens a segment of its own.
type ResetFeed struct {
	synth  *Synth
	resets bool
	next   int
}

// NewResetFeed returns the feed of a normal server, or of one that
// restarts at every scrape.
func NewResetFeed(resets bool) (*ResetFeed, error) {
	s, err := NewSynth()
	if err != nil {
		return nil, err
	}
	return &ResetFeed{synth: s, resets: resets}, nil
}

// Next returns the feed's next snapshot.
func (f *ResetFeed) Next() *scrape.Snapshot {
	at := Epoch.Add(time.Duration(f.next) * Interval)
	f.next++
	// The synthetic server's time runs a day ahead of Epoch, so that its
	// values have grown past zero at the first scrape.
	snap := f.synth.Snapshot(at.Add(24 * time.Hour))
	snap.Time = at
	if !f.resets {
		return snap
	}
	before := f.synth.Snapshot(at.Add(24*time.Hour - Interval))
	for name, ms := range snap.Models {
		prev := before.Models[name]
		for fam, h := range ms.Histograms {
			p := prev.Histograms[fam]
			d := slo.Histogram{Edges: h.Edges, Counts: make([]float64, len(h.Counts)), Sum: max(0, h.Sum-p.Sum)}
			for i := range h.Counts {
				d.Counts[i] = max(0, h.Counts[i]-p.Counts[i])
			}
			ms.Histograms[fam] = d
		}
		for fam, v := range ms.Counters {
			ms.Counters[fam] = max(0, v-prev.Counters[fam])
		}
		// The process started just after the previous scrape.
		ms.Created = float64(at.Add(-Interval + time.Second).Unix())
	}
	return snap
}

// ResetSpec is the pipeline of the reset measurement: one target, windows
// of 1m, 5m and 1h, the example SLO over 30 days with the default
// burn-rate alerts, the default history size limit, scraped and evaluated
// every Interval.
func ResetSpec() pipeline.Spec {
	period := 30 * 24 * time.Hour
	spec := pipeline.Spec{
		Windows:      []time.Duration{time.Minute, 5 * time.Minute, time.Hour},
		Quantiles:    DefaultWorkload().Quantiles,
		SLOs:         []slo.SLO{InteractiveSLO(period)},
		Retention:    history.NewRetention(time.Hour, period),
		HistoryLimit: int64(config.DefaultHistorySizeLimit),
		Targets: []pipeline.TargetSpec{{Name: TargetName(0), URL: "http://127.0.0.1/t/0/metrics",
			Profile: scrape.VLLM, Interval: Interval}},
	}
	for _, a := range config.DefaultAlertPolicy() {
		spec.Alerts = append(spec.Alerts, pipeline.BurnAlert{SLO: spec.SLOs[0].Name, Severity: a.Severity,
			Long: time.Duration(a.LongWindow), Short: time.Duration(a.ShortWindow), Factor: a.BurnFactor(period)})
	}
	return spec
}

// RunFeed scrapes and evaluates ResetSpec's target every Interval for
// span, from an empty pipeline, as the daemon (or a replay) would, and
// returns the process CPU time it took.
func RunFeed(resets bool, span time.Duration) (time.Duration, error) {
	feed, err := NewResetFeed(resets)
	if err != nil {
		return 0, err
	}
	p := pipeline.New(ResetSpec())
	n := int(span / Interval)
	cpu := cpuTime()
	for range n {
		snap := feed.Next()
		if err := p.Ingest(TargetName(0), snap, 0); err != nil {
			return 0, fmt.Errorf("ingest at %s: %w", snap.Time.Format(time.RFC3339), err)
		}
		p.Evaluate(snap.Time)
	}
	return cpuTime() - cpu, nil
}

// cpuTime is the process's user + system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
