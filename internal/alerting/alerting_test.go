package alerting

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// step is one evaluation of a lifecycle: whether the condition holds, and
// the alert's state after it ("" for no alert).
type step struct {
	at    time.Duration
	holds bool
	state State
}

// play runs steps through a book with one condition and checks each state.
func play(t *testing.T, c Condition, steps []step) []Alert {
	t.Helper()
	var b Book
	var last []Alert
	for _, s := range steps {
		var conds []Condition
		if s.holds {
			conds = []Condition{c}
		}
		got := b.Update(t0.Add(s.at), conds)
		last = got
		if s.state == "" {
			if len(got) != 0 {
				t.Fatalf("at %v: %+v, want no alert", s.at, got)
			}
			continue
		}
		if len(got) != 1 || got[0].State != s.state {
			t.Fatalf("at %v: %+v, want one %s alert", s.at, got, s.state)
		}
	}
	return last
}

// TestLifecycle walks one alert through Prometheus's states: pending while
// its condition has held for less than its For, dropped when a pending
// condition stops, firing after the hold, resolved when the condition
// stops, kept resolved for ResolvedRetention and then dropped.
func TestLifecycle(t *testing.T) {
	c := Condition{Target: "a", Labels: map[string]string{"alertname": "X"}, Annotations: map[string]string{"summary": "s"}, For: 15 * time.Minute}
	play(t, c, []step{
		{0, true, StatePending},
		{2 * time.Minute, false, ""},
		{3 * time.Minute, true, StatePending},
		{17 * time.Minute, true, StatePending},
		{18 * time.Minute, true, StateFiring},
		{30 * time.Minute, false, StateResolved},
		{45 * time.Minute, false, StateResolved},
		{46 * time.Minute, false, ""},
	})
}

// TestTimes checks the times an alert carries: when its condition began to
// hold, when it fired, when it resolved; and that a condition holding again
// after a resolve starts a new alert.
func TestTimes(t *testing.T) {
	c := Condition{Target: "a", Labels: map[string]string{"alertname": "X"}, For: time.Minute}
	var b Book
	b.Update(t0, []Condition{c})
	b.Update(t0.Add(time.Minute), []Condition{c})
	got := b.Update(t0.Add(2*time.Minute), nil)
	if a := got[0]; !a.ActiveAt.Equal(t0) || !a.FiredAt.Equal(t0.Add(time.Minute)) || !a.ResolvedAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("times %v %v %v, want 0, 1m, 2m after t0", a.ActiveAt, a.FiredAt, a.ResolvedAt)
	}
	got = b.Update(t0.Add(3*time.Minute), []Condition{c})
	if a := got[0]; a.State != StatePending || !a.ActiveAt.Equal(t0.Add(3*time.Minute)) || !a.FiredAt.IsZero() {
		t.Fatalf("after a resolve: %+v, want a new pending alert from 3m", a)
	}
}

// TestZeroForFiresAtOnce: a condition without a hold fires at the first
// evaluation it holds at.
func TestZeroForFiresAtOnce(t *testing.T) {
	play(t, Condition{Labels: map[string]string{"alertname": "X"}}, []step{{0, true, StateFiring}, {time.Minute, false, StateResolved}})
}

// TestKeepFiring: a firing alert with a keep-firing time keeps firing for
// that long after its condition stops, starts the time over when the
// condition holds again in between, and resolves once it has run out; a
// pending one is dropped at once whatever its keep-firing time.
func TestKeepFiring(t *testing.T) {
	c := Condition{Labels: map[string]string{"alertname": "X"}, For: time.Minute, KeepFiringFor: 5 * time.Minute}
	last := play(t, c, []step{
		{0, true, StatePending},
		{30 * time.Second, false, ""},
		{time.Minute, true, StatePending},
		{2 * time.Minute, true, StateFiring},
		{3 * time.Minute, false, StateFiring},
		{7 * time.Minute, false, StateFiring},
		{7*time.Minute + 30*time.Second, true, StateFiring},
		{8 * time.Minute, false, StateFiring},
		{12*time.Minute + 59*time.Second, false, StateFiring},
		{13 * time.Minute, false, StateResolved},
	})
	if a := last[0]; !a.ResolvedAt.Equal(t0.Add(13 * time.Minute)) {
		t.Fatalf("resolved at %v, want 13m", a.ResolvedAt)
	}
}

// TestClockBack: an evaluation time before the latest one is taken as the
// latest, so a clock stepping back neither fires an alert early nor drops
// a resolved one late.
func TestClockBack(t *testing.T) {
	c := Condition{Labels: map[string]string{"alertname": "X"}, For: 2 * time.Minute}
	var b Book
	b.Update(t0.Add(10*time.Minute), []Condition{c})
	if got := b.Update(t0, []Condition{c}); got[0].State != StatePending || !got[0].ActiveAt.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("after a step back: %+v, want pending since 10m", got[0])
	}
	if got := b.Update(t0.Add(12*time.Minute), []Condition{c}); got[0].State != StateFiring {
		t.Fatalf("at 12m: %+v, want firing", got[0])
	}
}

// TestIdentity: alerts are told apart by target and labels, whatever the
// order of the labels or of the conditions, and listed in Fingerprint
// order; one condition listed twice is one alert.
func TestIdentity(t *testing.T) {
	x := func(target, sev string) Condition {
		return Condition{Target: target, Labels: map[string]string{"alertname": "X", "severity": sev}}
	}
	var b Book
	got := b.Update(t0, []Condition{x("b", "page"), x("a", "ticket"), x("a", "page"), x("a", "page")})
	if len(got) != 3 {
		t.Fatalf("%d alerts, want 3: %+v", len(got), got)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].Fingerprint() >= got[i].Fingerprint() {
			t.Fatalf("alerts out of order: %q before %q", got[i-1].Fingerprint(), got[i].Fingerprint())
		}
	}
	if got[0].Target != "a" || got[0].Labels["severity"] != "page" || got[2].Target != "b" {
		t.Fatalf("order %+v, want a/page, a/ticket, b/page", got)
	}
}
