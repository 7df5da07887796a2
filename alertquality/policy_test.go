package alertquality

import (
	"fmt"
	"math"
	"strings"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
)

// candidates are the paging policies the daemon's was chosen against.
func candidates() []Policy {
	f := func(c pipeline.BurnCheck) float64 { return c.Alert.Factor }
	return []Policy{
		{"upper bound", func(c pipeline.BurnCheck) bool { return c.Long.Upper > f(c) && c.Short.Upper > f(c) }},
		{"estimate", func(c pipeline.BurnCheck) bool { return c.Long.Estimate > f(c) && c.Short.Estimate > f(c) }},
		{"lower bound", func(c pipeline.BurnCheck) bool { return c.Long.Lower > f(c) && c.Short.Lower > f(c) }},
		{"upper and evidence (chosen)", pipeline.BurnCheck.Active},
		summedShares(),
		finishedOnly(),
	}
}

// observed is an Evidence's observed burn rate with the joint's bad share
// taken as joint(BadShares), over the finished requests and, when
// withUnserved, the unserved ones: (s·N + U) / (N + U) / (1 - goal). A
// BurnCheck does not carry the goal; every scenario's is harnessGoal.
func observed(e pipeline.Evidence, joint func(map[string]float64) float64, withUnserved bool) float64 {
	s, n, u := joint(e.BadShares), e.Requests, e.Unserved
	if !withUnserved {
		u = 0
	}
	if !(n+u > 0) {
		return s / (1 - harnessGoal)
	}
	return (s*n + u) / (n + u) / (1 - harnessGoal)
}

// sum is the Fréchet bound of the joint's bad share: the objectives' bad
// shares summed, at most 1.
func sum(shares map[string]float64) float64 {
	s := 0.0
	for _, b := range shares {
		s += b
	}
	return math.Min(1, s)
}

// evidenceGate is the page gate with the observed burn rate obs: the upper
// bound and the larger of the lower bound and obs above the factor in both
// windows.
func evidenceGate(name string, obs func(pipeline.Evidence) float64) Policy {
	return Policy{name, func(c pipeline.BurnCheck) bool {
		f := c.Alert.Factor
		return c.Long.Upper > f && c.Short.Upper > f &&
			math.Max(obs(c.LongEvidence), c.Long.Lower) > f && math.Max(obs(c.ShortEvidence), c.Short.Lower) > f
	}}
}

// summedShares is the gate before the observed burn read the joint as
// independent objectives: the objectives' bad shares summed (counting a
// request bad on two objectives twice), over the SLO's population.
func summedShares() Policy {
	return evidenceGate("upper and evidence, shares summed (before)", func(e pipeline.Evidence) float64 { return observed(e, sum, true) })
}

// finishedOnly is the gate before it followed the SLO's population: the
// upper bound and the observed burn of the finished requests alone (the
// objectives' bad shares summed, without the unserved requests), both above
// the factor in both windows.
func finishedOnly() Policy {
	f := func(c pipeline.BurnCheck) float64 { return c.Alert.Factor }
	obs := func(e pipeline.Evidence) float64 { return observed(e, sum, false) }
	return Policy{"upper and finished-only observed (earlier)", func(c pipeline.BurnCheck) bool {
		return c.Long.Upper > f(c) && c.Short.Upper > f(c) && obs(c.LongEvidence) > f(c) && obs(c.ShortEvidence) > f(c)
	}}
}

// comparePolicies writes one line per alert with the false and missed pages
// of every candidate policy, when any of them or the truth fired.
func comparePolicies(b *strings.Builder, run *Run, k Key) {
	var cells []string
	any := len(run.Truth[k]) > 0
	for _, p := range candidates() {
		got := run.Replay(k, p)
		any = any || len(got) > 0
		s := score(run.Truth[k], got)
		cells = append(cells, fmt.Sprintf("%s %d/%d", p.Name, s.False, s.Missed))
	}
	if any {
		fmt.Fprintf(b, "  %-16s %-18s %s\n", run.Scenario.Name, k, strings.Join(cells, ", "))
	}
}
