package history

import (
	"fmt"
	"time"
)

// Tier is one level of retention: points younger than Keep (measured from the
// newest appended time) are kept, at most one per Step-aligned bucket. A Step
// of 0 keeps every point. Whatever the Step, the last point of every segment
// is kept, because exact deltas across a restart need it.
type Tier struct {
	Step time.Duration
	Keep time.Duration
}

// Retention is the list of tiers, finest first: tier 0 has Step 0 and keeps
// every scrape; each later tier keeps older points more sparsely, up to its
// Keep. Points older than the last tier's Keep are dropped.
type Retention struct {
	Tiers []Tier
	// MaxBytes caps the memory the history's points and layouts may hold
	// (see History.Usage for what is counted); 0 means no cap. Past it the
	// oldest points are dropped, so windows reach less far back, and
	// History.Usage counts them. Whatever a target sends, the history then
	// stays within the cap, except that every model keeps its two newest
	// points.
	MaxBytes int64
}

// Retention defaults used by NewRetention.
const (
	minRawKeep   = time.Hour
	midStep      = 5 * time.Minute
	midCover     = 24 * time.Hour
	coarseStep   = time.Hour
	rawKeepSlack = 5 * time.Minute
)

// NewRetention builds tiers that answer every window up to longestWindow from
// raw points and every period up to longestPeriod from coarser ones: raw
// points for max(longestWindow, 1h), one point per 5m up to a day, one point
// per hour up to longestPeriod. Each tier keeps one extra step (5m for the raw
// tier) beyond what it covers, so that the point at or before a window's start
// is still there when it is asked for.
func NewRetention(longestWindow, longestPeriod time.Duration) Retention {
	raw := max(longestWindow, minRawKeep)
	tiers := []Tier{{Step: 0, Keep: raw + rawKeepSlack}}
	covered := raw
	if mid := min(longestPeriod, midCover); mid > covered {
		tiers = append(tiers, Tier{Step: midStep, Keep: mid + midStep})
		covered = mid
	}
	if longestPeriod > covered {
		tiers = append(tiers, Tier{Step: coarseStep, Keep: longestPeriod + coarseStep})
	}
	return Retention{Tiers: tiers}
}

// Validate reports whether the tiers are usable: at least one, tier 0 with
// Step 0, positive and strictly increasing Keep, non-negative and
// non-decreasing Step.
func (r Retention) Validate() error {
	if len(r.Tiers) == 0 {
		return fmt.Errorf("retention: no tiers")
	}
	if r.Tiers[0].Step != 0 {
		return fmt.Errorf("retention: tier 0 step %v: must be 0 (every scrape)", r.Tiers[0].Step)
	}
	for i, t := range r.Tiers {
		if t.Keep <= 0 {
			return fmt.Errorf("retention: tier %d keep %v: must be positive", i, t.Keep)
		}
		if t.Step < 0 {
			return fmt.Errorf("retention: tier %d step %v: must not be negative", i, t.Step)
		}
		if i == 0 {
			continue
		}
		if prev := r.Tiers[i-1]; t.Keep <= prev.Keep {
			return fmt.Errorf("retention: tier %d keep %v: must exceed tier %d keep %v", i, t.Keep, i-1, prev.Keep)
		} else if t.Step < prev.Step {
			return fmt.Errorf("retention: tier %d step %v: must not be finer than tier %d step %v", i, t.Step, i-1, prev.Step)
		}
	}
	return nil
}

// Longest is how far back the retention reaches: the last tier's Keep.
func (r Retention) Longest() time.Duration {
	if len(r.Tiers) == 0 {
		return 0
	}
	return r.Tiers[len(r.Tiers)-1].Keep
}

// sanitized returns r when valid, else a single raw tier keeping as long as
// r's longest Keep (at least an hour), so that New never fails.
func (r Retention) sanitized() Retention {
	if r.Validate() == nil {
		return Retention{Tiers: append([]Tier(nil), r.Tiers...), MaxBytes: r.MaxBytes}
	}
	keep := minRawKeep
	for _, t := range r.Tiers {
		keep = max(keep, t.Keep)
	}
	return Retention{Tiers: []Tier{{Step: 0, Keep: keep}}, MaxBytes: max(r.MaxBytes, 0)}
}
