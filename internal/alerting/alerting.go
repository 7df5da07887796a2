// Package alerting is the one alert state machine of the daemon: every
// alert it raises (burn rate, target down, metric family missing, capacity
// headroom) is a Condition that holds or not at each evaluation, and a Book
// carries each alert from one evaluation to the next through Prometheus's
// states: pending while its condition has held for less than its `for`,
// firing once it has held that long (and, with a keep-firing time, for that
// long after it stops), resolved when a firing alert's condition stops, and
// kept resolved for ResolvedRetention so that a notifier can send the resolve
// more than once.
//
// It imports nothing of ours, so that the pipeline, which decides the
// conditions of its report, and the packages that add their own conditions
// to it (capacity) share it without an import cycle.
package alerting

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// State is the state of an alert, as Prometheus names it.
type State string

// The alert states.
const (
	StatePending  State = "pending"
	StateFiring   State = "firing"
	StateResolved State = "resolved"
)

// ResolvedRetention is how long a resolved alert stays in the book, so that
// a notifier can send the resolve more than once, as Prometheus's rule
// manager keeps it.
const ResolvedRetention = 15 * time.Minute

// Alert is one alert instance: a set of labels and its state over time.
type Alert struct {
	// Target is the target whose evaluation raised the alert. An alert need
	// not carry it as a label (a burn-rate alert does not, so that it
	// matches the generated rule's); it is part of the alert's identity.
	Target      string
	Labels      map[string]string
	Annotations map[string]string
	State       State
	// ActiveAt is when the condition began to hold; FiredAt when the alert
	// started firing; ResolvedAt when a firing alert's condition stopped
	// (and its keep-firing time, if any, ran out).
	ActiveAt, FiredAt, ResolvedAt time.Time
	// KeepFiringSince is when the condition of a firing alert kept firing
	// by its keep-firing time stopped holding; zero while it holds.
	KeepFiringSince time.Time
}

// Name is the alertname label.
func (a Alert) Name() string { return a.Labels["alertname"] }

// Fingerprint identifies the alert: its target and its labels.
func (a Alert) Fingerprint() string { return a.Target + "\x00" + LabelsKey(a.Labels) }

// Condition is one alert whose condition holds at an evaluation.
type Condition struct {
	Target      string
	Labels      map[string]string
	Annotations map[string]string
	// For is how long the condition must hold before the alert fires.
	For time.Duration
	// KeepFiringFor is how long a firing alert keeps firing after its
	// condition stops (Prometheus's keep_firing_for); 0: it resolves at
	// once.
	KeepFiringFor time.Duration
}

// key identifies the alert a condition raises.
func (c Condition) key() string { return c.Target + "\x00" + LabelsKey(c.Labels) }

// LabelsKey writes a label set in sorted order, each name and value ended
// by a NUL byte: equal for equal sets, different for different ones.
func LabelsKey(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(labels[k])
		b.WriteByte(0)
	}
	return b.String()
}

// Book remembers alert states between evaluations. It needs evaluation
// times in order: an earlier time is taken to be the latest one, so a
// clock stepping back delays alerts rather than making them fire early or
// resolve twice. Its zero value is an empty book. It is not safe for
// concurrent use.
type Book struct {
	alerts map[string]*entry
	last   time.Time
}

// entry is an alert and the keep-firing time of its latest condition,
// which applies once the condition stops holding.
type entry struct {
	Alert
	keepFiringFor time.Duration
}

// Update applies the conditions that hold at now and returns every alert
// that is pending, firing or resolved within ResolvedRetention, ordered by
// Fingerprint. A condition listed twice counts once (its last listing's
// annotations and times).
func (b *Book) Update(now time.Time, conds []Condition) []Alert {
	if b.alerts == nil {
		b.alerts = map[string]*entry{}
	}
	if now.Before(b.last) {
		now = b.last
	}
	b.last = now
	held := make(map[string]bool, len(conds))
	for _, c := range conds {
		k := c.key()
		held[k] = true
		b.hold(k, c, now)
	}
	for k, e := range b.alerts {
		if !held[k] && b.release(e, now) {
			delete(b.alerts, k)
		}
	}
	out := make([]Alert, 0, len(b.alerts))
	for _, k := range slices.Sorted(maps.Keys(b.alerts)) {
		out = append(out, b.alerts[k].Alert)
	}
	return out
}

// hold applies a condition that holds at now: a new alert (or one that
// resolved) starts pending, a pending one fires once it has held for its
// For, a firing one stays firing.
func (b *Book) hold(k string, c Condition, now time.Time) {
	e, ok := b.alerts[k]
	if !ok || e.State == StateResolved {
		e = &entry{Alert: Alert{Target: c.Target, Labels: c.Labels, State: StatePending, ActiveAt: now}}
		b.alerts[k] = e
	}
	e.Annotations = c.Annotations
	e.keepFiringFor = c.KeepFiringFor
	e.KeepFiringSince = time.Time{}
	if e.State == StatePending && now.Sub(e.ActiveAt) >= c.For {
		e.State, e.FiredAt = StateFiring, now
	}
}

// release applies the end of an alert's condition at now and reports
// whether the alert leaves the book: a pending alert leaves at once, a
// firing one keeps firing for its keep-firing time and then resolves, a
// resolved one leaves after ResolvedRetention.
func (b *Book) release(e *entry, now time.Time) (gone bool) {
	switch e.State {
	case StatePending:
		return true
	case StateFiring:
		if e.keepFiringFor > 0 {
			if e.KeepFiringSince.IsZero() {
				e.KeepFiringSince = now
			}
			if now.Sub(e.KeepFiringSince) < e.keepFiringFor {
				return false
			}
		}
		e.State, e.ResolvedAt = StateResolved, now
		return false
	default:
		return now.Sub(e.ResolvedAt) > ResolvedRetention
	}
}
