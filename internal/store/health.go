// Health: what a target's scrapes say about it, for the operator: whether
// the last scrape succeeded, when and how long it took, failures by reason,
// the models left out of good scrapes by family and reason, the profile's
// families missing or found, the models refused by the cap on model names,
// and lasting warnings about the configuration against what the target
// serves (an SLO threshold that is not a bucket edge, a profile the target
// does not serve). Each store keeps one Scrapes, and the pipeline copies it
// into each report (Store.Health).
//
// Scrapes judges scrapes, caps their models and words warnings, nothing
// else: it never touches the history and computes no SLO number. Each
// warning's text is the same at every scrape while its cause lasts, so that
// it is logged once, as Prometheus's scrape loop logs a failing target once
// per state change.

package store

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Rejection is a logical family (as in Scrapes.Missing) and the reason (a
// scrape failure reason) it was rejected for.
type Rejection struct {
	Family, Reason string
}

// Scrapes is the record of a target's scrapes since start.
type Scrapes struct {
	// Tried is true once a scrape has completed (success or failure); Up
	// when the last one succeeded.
	Tried, Up bool
	// LastScrape is when the last scrape finished; LastError its error, if
	// any (for a good scrape that left models out, the first rejection).
	LastScrape time.Time
	LastError  string
	// Duration is the last scrape's duration in seconds.
	Duration float64
	// Failures counts failed scrapes by reason.
	Failures map[string]float64
	// Rejections counts, by family and reason, the models left out of
	// otherwise good scrapes because that family failed validation for them
	// (see scrape.Snapshot.Rejected).
	Rejections map[Rejection]float64
	// Missing lists the profile families absent from the last good scrape,
	// and Found the exposed name each present family was read from.
	Missing []string
	Found   map[string]string
	// ModelsDropped counts the model_name values Cap refused.
	ModelsDropped float64
	// offEdge holds a warning per SLO objective whose threshold is not an
	// edge of the scraped buckets (see CheckEdges).
	offEdge map[string]string
}

// Succeeded records a good scrape: snap, which took d.
func (s *Scrapes) Succeeded(snap *scrape.Snapshot, d time.Duration) {
	s.Tried, s.Up, s.LastScrape, s.Duration = true, true, snap.Time, d.Seconds()
	s.LastError = rejectedSummary(snap.Rejected)
	if len(snap.Rejected) > 0 && s.Rejections == nil {
		s.Rejections = map[Rejection]float64{}
	}
	for _, r := range snap.Rejected {
		s.Rejections[Rejection{Family: string(r.Family), Reason: r.Err.Reason}]++
	}
	s.Missing = s.Missing[:0]
	for _, f := range snap.Missing {
		s.Missing = append(s.Missing, string(f))
	}
	if s.Found == nil {
		s.Found = map[string]string{}
	}
	clear(s.Found)
	for f, n := range snap.Found {
		s.Found[string(f)] = n
	}
}

// Failed records a failed scrape under reason, finished at at after d; a
// nil err keeps the last error as it was.
func (s *Scrapes) Failed(reason string, err error, at time.Time, d time.Duration) {
	s.Tried, s.Up, s.LastScrape, s.Duration = true, false, at, d.Seconds()
	if s.Failures == nil {
		s.Failures = map[string]float64{}
	}
	s.Failures[reason]++
	if err != nil {
		s.LastError = err.Error()
	}
}

// Cap drops from snap the models beyond maxModels that known (the models
// the target's history holds) lacks, so that a target that suddenly serves
// thousands of model names cannot exhaust memory; the models already kept
// stay, and each one dropped counts in ModelsDropped. The caller's snapshot
// is left as it is: a capped one is a copy with its own model map.
func (s *Scrapes) Cap(snap *scrape.Snapshot, known []string, maxModels int) *scrape.Snapshot {
	if maxModels <= 0 || len(snap.Models) == 0 {
		return snap
	}
	kept := len(known)
	out := snap
	for _, name := range slices.Sorted(maps.Keys(snap.Models)) {
		if slices.Contains(known, name) {
			continue
		}
		if kept >= maxModels {
			if out == snap {
				capped := *snap
				capped.Models = maps.Clone(snap.Models)
				out = &capped
			}
			delete(out.Models, name)
			s.ModelsDropped++
			continue
		}
		kept++
	}
	return out
}

// Clone is a copy of s that later scrapes leave alone.
func (s Scrapes) Clone() Scrapes {
	s.Failures, s.Rejections, s.offEdge = maps.Clone(s.Failures), maps.Clone(s.Rejections), maps.Clone(s.offEdge)
	s.Missing, s.Found = slices.Clone(s.Missing), maps.Clone(s.Found)
	return s
}

// rejectedSummary is the last error of a good scrape that left models out
// (the first rejection), "" when it left none out.
func rejectedSummary(rs []scrape.Rejection) string {
	if len(rs) == 0 {
		return ""
	}
	msg := "model left out of the scrape: " + rs[0].Err.Error()
	if len(rs) > 1 {
		msg += fmt.Sprintf(" (and %d more rejected families)", len(rs)-1)
	}
	return msg
}

// ProfileMismatch is the warning when the last good scrape held none of the
// families profile maps: the target answers, but it is not that engine's
// /metrics (another engine, Ray Serve's re-export, a wrong path); "" when
// it is not so.
func (s Scrapes) ProfileMismatch(profile string) string {
	if !s.Up || len(s.Found) > 0 || len(s.Missing) == 0 {
		return ""
	}
	return fmt.Sprintf("the target serves none of the families of profile %q: is the URL the engine's /metrics? "+
		"(vLLM under Ray Serve needs profile \"ray-vllm\", SGLang profile \"sglang\")", profile)
}

// Warnings are the lasting warnings about the configuration against what
// the target serves, for a target scraped with profile: the profile
// mismatch first, then the thresholds off the buckets' edges by SLO and
// metric.
func (s Scrapes) Warnings(profile string) []string {
	var out []string
	if w := s.ProfileMismatch(profile); w != "" {
		out = append(out, w)
	}
	for _, k := range slices.Sorted(maps.Keys(s.offEdge)) {
		out = append(out, s.offEdge[k])
	}
	return out
}

// ForgetEdges drops every off-edge warning, when the SLOs may have changed:
// the next scrape notes them again against the objectives then in force.
func (s *Scrapes) ForgetEdges() { clear(s.offEdge) }

// CheckEdges notes a warning for every objective of slos whose threshold is
// not one of the bucket edges snap holds for it, so the operator learns why
// its attainment is not exact. A warning already noted for the SLO and
// metric is kept as it is.
func (s *Scrapes) CheckEdges(slos []slo.SLO, snap *scrape.Snapshot) {
	if s.offEdge == nil {
		s.offEdge = map[string]string{}
	}
	for _, model := range slices.Sorted(maps.Keys(snap.Models)) {
		ms := snap.Models[model]
		for _, sl := range slos {
			for _, o := range sl.Objectives {
				h, ok := ms.Histograms[scrape.Family(o.Metric)]
				key := sl.Name + "/" + string(o.Metric)
				if _, seen := s.offEdge[key]; seen || !ok || slo.OnEdge(o.Threshold, h.Edges) {
					continue
				}
				lo, hi := 0.0, math.Inf(1)
				for _, e := range h.Edges {
					if e < o.Threshold {
						lo = e
					} else {
						hi = e
						break
					}
				}
				s.offEdge[key] = fmt.Sprintf("SLO %q objective %s <= %gs is not a bucket edge of model %q (nearest edges %g and %g): its attainment is bracketed, not exact; a threshold on an edge makes it exact",
					sl.Name, o.Metric, o.Threshold, model, lo, hi)
			}
		}
	}
}
