package pipeline

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/store"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// A target whose URL or profile changes, or that leaves the configuration,
// starts afresh: its history described another server. But an operator who
// edits a URL by mistake and restores it a minute later expects the history
// back, and so does one who starts the daemon once with a configuration that
// lacks a target. So the pipeline keeps the last few retired targets, with
// their histories and counters, and a reload that configures the same name,
// URL and profile again revives one. Retired targets are not scraped and not
// evaluated; they are saved in the state file (MarshalState) and restored
// from it as retired when the configuration lacks them (UnmarshalState), so
// that a restart does not delete them. They are kept until pushed out by
// newer ones (maxRetiredTargets) or until ExpireRetired finds their newest
// point older than the retention's longest keep, when nothing of their
// history could be used any more. Their memory is bounded by
// maxRetiredTargets times the per-target history limit.

// maxRetiredTargets is how many retired targets are kept for revival, the
// most recently retired first.
const maxRetiredTargets = 8

// identity is what must stay equal for a target to keep its history.
func (ts TargetSpec) identity() string {
	return store.Identity(ts.Name, ts.URL, ts.Profile.Name)
}

// retiredSpec is the spec of a target restored as retired: only its identity
// matters until a reload revives it under a full spec.
func retiredSpec(name, url, profile string) TargetSpec {
	p, err := scrape.LookupProfile(profile)
	if err != nil {
		p = scrape.Profile{Name: profile}
	}
	return TargetSpec{Name: name, URL: url, Profile: p}
}

// reviveOrNew returns the retired target with the spec's identity, moved
// back to service under the new spec, or a fresh target. p.mu must be held.
func (p *Pipeline) reviveOrNew(ts TargetSpec, spec Spec) *target {
	id := ts.identity()
	for i, t := range p.retired {
		if t.spec.identity() != id {
			continue
		}
		p.retired = append(p.retired[:i], p.retired[i+1:]...)
		t.mu.Lock()
		defer t.mu.Unlock()
		t.spec = ts
		t.reconfigure(spec)
		return t
	}
	return newTarget(ts, spec)
}

// retire keeps the targets of the current configuration that next does not
// carry over, newest first, dropping the oldest beyond maxRetiredTargets.
// p.mu must be held.
func (p *Pipeline) retire(next map[string]*target) {
	for _, ts := range p.spec.Targets {
		old := p.targets[ts.Name]
		if old == nil || next[ts.Name] == old {
			continue
		}
		p.keepRetired([]*target{old})
	}
}

// keepRetired puts newer in front of the retired targets, drops older ones
// of the same identity and keeps at most maxRetiredTargets. p.mu must be
// held.
func (p *Pipeline) keepRetired(newer []*target) {
	kept := append([]*target(nil), newer...)
	seen := map[string]bool{}
	for _, t := range newer {
		seen[t.spec.identity()] = true
	}
	for _, t := range p.retired {
		if !seen[t.spec.identity()] {
			kept = append(kept, t)
		}
	}
	p.retired = kept[:min(len(kept), maxRetiredTargets)]
}

// Retired returns the names of the retired targets kept for revival, the
// most recently retired first.
func (p *Pipeline) Retired() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	names := make([]string, 0, len(p.retired))
	for _, t := range p.retired {
		names = append(names, t.spec.Name)
	}
	return names
}

// ExpireRetired drops the retired targets whose newest point is older than
// the retention's longest keep before now (or that hold no point at all):
// none of their history could serve a window or a period any more. It
// returns the names dropped.
func (p *Pipeline) ExpireRetired(now time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var keep time.Duration
	if tiers := p.spec.retention().Tiers; len(tiers) > 0 {
		keep = tiers[len(tiers)-1].Keep
	}
	var expired []string
	kept := p.retired[:0]
	for _, t := range p.retired {
		t.mu.Lock()
		newest := t.store.Newest()
		t.mu.Unlock()
		if newest.IsZero() || now.Sub(newest) > keep {
			expired = append(expired, t.spec.Name)
			continue
		}
		kept = append(kept, t)
	}
	clear(p.retired[len(kept):])
	p.retired = kept
	return expired
}
