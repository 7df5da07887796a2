package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/buckets"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// serverSnapshots are one scrape per configured target: scraped now
// (probe), or the last successful one of each in a recording. A target
// that cannot be read is reported and left out.
func serverSnapshots(cfg *config.Config, probe bool, recordingPath string, stderr io.Writer) map[string]*scrape.Snapshot {
	out := map[string]*scrape.Snapshot{}
	if recordingPath != "" {
		err := recording.Scan(recordingPath, func(e recording.Entry) error {
			if e.Body == "" {
				return nil
			}
			if snap, err := scrape.Parse([]byte(e.Body), e.ContentType, profileOf(cfg, e.Target), e.Time); err == nil {
				out[e.Target] = snap
			}
			return nil
		}, func(error) {})
		if err != nil {
			fmt.Fprintf(stderr, "recording %s: %v\n", recordingPath, err)
		}
		return out
	}
	if !probe {
		return out
	}
	for _, t := range cfg.Targets {
		snap, err := probeTarget(t, cfg.Global)
		if err != nil {
			fmt.Fprintf(stderr, "target %q: %v\n", t.Name, err)
			continue
		}
		out[t.Name] = snap
	}
	return out
}

// probeTarget scrapes one target once, as the daemon would.
func probeTarget(t config.Target, g config.Global) (*scrape.Snapshot, error) {
	profile, err := scrape.LookupProfile(t.Profile)
	if err != nil {
		return nil, err
	}
	f, err := scrape.NewFetcher(t.Name, t.URL, t.HTTPClientConfig, t.Timeout(g), int64(g.BodySizeLimit))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), t.Timeout(g))
	defer cancel()
	snap, _, err := f.Scrape(ctx, profile, time.Now())
	return snap, err
}

// explainObjectives says, for every SLO objective on every server read,
// whether the server's histograms make it exact (the threshold is an
// edge), bracketed (between two edges: the good count is only known
// between the counts at them) or unknown (the server lacks the histogram),
// and why. It returns how many objectives are unknown.
func explainObjectives(out io.Writer, cfg *config.Config, snaps map[string]*scrape.Snapshot) int {
	slos := daemon.PipelineSpec(cfg).SLOs
	unknown := 0
	for _, target := range slices.Sorted(maps.Keys(snaps)) {
		snap := snaps[target]
		profile := profileOf(cfg, target)
		for _, s := range slos {
			for _, o := range s.Objectives {
				line, known := explainObjective(snap, profile, o)
				if !known {
					unknown++
				}
				fmt.Fprintf(out, "target %q, SLO %q: %s\n", target, s.Name, line)
			}
		}
	}
	return unknown
}

// explainObjective is one objective's line, and whether it can be judged.
func explainObjective(snap *scrape.Snapshot, profile scrape.Profile, o slo.Objective) (string, bool) {
	what := fmt.Sprintf("%s <= %gs", o.Metric, o.Threshold)
	fam := scrape.Family(o.Metric)
	name, found := snap.Found[fam]
	if !found {
		spec, _ := profile.Spec(fam)
		why := fmt.Sprintf("the server exposes none of %v", spec.Names)
		if o.Metric == slo.TPOT {
			why += " (vLLM before 0.11 has no per-request TPOT: use an itl objective)"
		}
		return what + ": unknown: " + why, false
	}
	edges, ok := edgesOf(snap, fam)
	if !ok {
		return what + ": unknown: " + name + " has no model's histogram in this scrape", false
	}
	p := buckets.Place([]slo.SLO{{Objectives: []slo.Objective{o}}}, map[buckets.Family][]float64{buckets.FamilyOf(o.Metric): edges})[0]
	if p.OnEdge {
		return fmt.Sprintf("%s: exact (an edge of %s)", what, name), true
	}
	return fmt.Sprintf("%s: bracketed between the edges %g and %g of %s (buckets prints edges that make it exact)", what, p.Below, p.Above, name), true
}

// edgesOf is the finite edges of a family's histogram in the first model
// (sorted by name) that has it.
func edgesOf(snap *scrape.Snapshot, fam scrape.Family) ([]float64, bool) {
	for _, model := range slices.Sorted(maps.Keys(snap.Models)) {
		h, ok := snap.Models[model].Histograms[fam]
		if !ok || len(h.Edges) == 0 {
			continue
		}
		edges := h.Edges
		if math.IsInf(edges[len(edges)-1], 1) {
			edges = edges[:len(edges)-1]
		}
		return edges, true
	}
	return nil, false
}
