package alertquality

import (
	"fmt"
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
		finishedOnly(),
	}
}

// finishedOnly is the gate before it followed the SLO's population: the
// upper bound and the observed burn of the finished requests alone (the
// objectives' bad shares summed, without the abandoned requests), both above
// the factor in both windows.
func finishedOnly() Policy {
	f := func(c pipeline.BurnCheck) float64 { return c.Alert.Factor }
	// finished undoes the abandoned requests' part of Observed: with U of
	// them beside N finished, Observed·(N + U) = (s·N + U)/(1 - goal), and
	// the finished requests' observed burn is s/(1 - goal). A BurnCheck
	// does not carry the goal; every scenario's is harnessGoal.
	finished := func(e pipeline.Evidence) float64 {
		if !(e.Requests > 0) {
			return 0
		}
		return (e.Observed*(e.Requests+e.Unserved) - e.Unserved/(1-harnessGoal)) / e.Requests
	}
	return Policy{"upper and finished-only observed (before)", func(c pipeline.BurnCheck) bool {
		return c.Long.Upper > f(c) && c.Short.Upper > f(c) && finished(c.LongEvidence) > f(c) && finished(c.ShortEvidence) > f(c)
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
