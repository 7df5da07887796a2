package pipeline

// A target whose URL or profile changes, or that leaves the configuration,
// starts afresh: its history described another server. But an operator who
// edits a URL by mistake and restores it a minute later expects the history
// back. So the pipeline keeps the last few retired targets, with their
// histories and counters, and a reload that configures the same name, URL and
// profile again revives one. Retired targets are not scraped, not evaluated
// and not saved in the state file; their memory is bounded by
// maxRetiredTargets times the per-target history limit.

// maxRetiredTargets is how many retired targets are kept for revival, the
// most recently retired first.
const maxRetiredTargets = 8

// identity is what must stay equal for a target to keep its history.
func (ts TargetSpec) identity() string {
	return ts.Name + "\x00" + ts.URL + "\x00" + ts.Profile.Name
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
		kept := []*target{old}
		for _, t := range p.retired {
			if t.spec.identity() != old.spec.identity() {
				kept = append(kept, t)
			}
		}
		p.retired = kept[:min(len(kept), maxRetiredTargets)]
	}
}
