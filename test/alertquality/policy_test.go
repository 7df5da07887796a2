package alertquality

import (
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// candidates are the paging policies the daemon's was chosen against, for
// an SLO whose abandoned streams count bad (abandonedBad) or not.
func candidates(abandonedBad bool) []Policy {
	f := func(c pipeline.BurnCheck) float64 { return c.Alert.Factor }
	ps := []Policy{
		{"upper bound", func(c pipeline.BurnCheck) bool { return c.Long.Upper > f(c) && c.Short.Upper > f(c) }},
		{"estimate", func(c pipeline.BurnCheck) bool { return c.Long.Estimate > f(c) && c.Short.Estimate > f(c) }},
		{"lower bound", func(c pipeline.BurnCheck) bool { return c.Long.Lower > f(c) && c.Short.Lower > f(c) }},
		{"upper and evidence (chosen)", pipeline.BurnCheck.Active},
		spreadFirstTokens(),
		summedShares(),
		finishedOnly(),
	}
	for _, v := range evidenceVariants(abandonedBad)[2:] { // the first two are above
		ps = append(ps, evidenceGate(v.Name, v.Observed))
	}
	return append(ps, oneRequestMargin())
}

// oneRequestMargin is the chosen gate with its evidence required to exceed
// the factor by one request's share of the window's population, 1 / (N + U)
// / (1 − goal), the size of the abandoned estimate's smallest edge error: a
// margin against that noise, which moves the ambiguity to the breaches
// within a request above the factor.
func oneRequestMargin() Policy {
	above := func(e slo.Evidence, b slo.Bounded, f float64) bool {
		margin := 0.0
		if n := e.Requests + e.Unserved; n > 0 {
			margin = 1 / n / (1 - harnessGoal)
		}
		return e.Burn(b) > f+margin
	}
	return Policy{"upper and evidence a request above the factor (a margin, for scale)", func(c pipeline.BurnCheck) bool {
		f := c.Alert.Factor
		return c.Long.Upper > f && c.Short.Upper > f && above(c.LongEvidence, c.Long, f) && above(c.ShortEvidence, c.Short, f)
	}}
}

// evidenceVariant is one way to read the observed burn rate from a window's
// Evidence; the page gate takes the larger of it and the lower bound.
type evidenceVariant struct {
	Name     string
	Observed func(slo.Evidence) float64
}

// evidenceVariants are the observed burn rates the chosen one (the first)
// was measured against, for an SLO whose abandoned streams count bad
// (abandonedBad) or not.
func evidenceVariants(abandonedBad bool) []evidenceVariant {
	return []evidenceVariant{
		{"independence, slow first tokens abandoned first (chosen)", func(e slo.Evidence) float64 { return e.Observed }},
		{"independence, slow first tokens spread over every first token (before)", func(e slo.Evidence) float64 {
			return observedOver(e, e.BadShares, e.Unserved)
		}},
		{"objectives summed (earlier)", func(e slo.Evidence) float64 { return observed(e, sum, true) }},
		{"slow first tokens abandoned first, abandoned: bad only", func(e slo.Evidence) float64 {
			if !abandonedBad {
				return observedOver(e, e.BadShares, e.Unserved)
			}
			return e.Observed
		}},
		{"abandoned at the ledger's estimate (daemon only)", func(e slo.Evidence) float64 {
			return observedOver(e, abandonedFirst(e), ledgerUnserved(e, abandonedBad))
		}},
		{"abandoned first, one abandoned fewer (a bias, for scale)", func(e slo.Evidence) float64 {
			u := e.Unserved
			if abandonedBad && e.Abandoned >= 1 {
				u--
			}
			return observedOver(e, abandonedFirst(e), u)
		}},
	}
}

// abandonedFirst are an Evidence's bad shares as Observed charges them to
// the finished requests: TTFT's the slow first tokens beyond the abandoned
// streams' (Evidence.FinisherTTFT), the others their own.
func abandonedFirst(e slo.Evidence) map[string]float64 {
	out := maps.Clone(e.BadShares)
	if _, ok := out[string(slo.TTFT)]; ok {
		out[string(slo.TTFT)] = e.FinisherTTFT
	}
	return out
}

// ledgerUnserved is an Evidence's unserved requests with the abandoned ones
// at the ledger's estimate (the running gauge clamped into the bounds the
// ledger proves from the intervals before), which the rules cannot follow.
func ledgerUnserved(e slo.Evidence, abandonedBad bool) float64 {
	if !abandonedBad {
		return e.Unserved
	}
	return e.Unserved - e.Abandoned + math.Max(0, e.Ledger.Estimate)
}

// observedOver is the observed burn rate (s·N + u) / (N + u) / (1 − goal)
// with s the independence product of shares.
func observedOver(e slo.Evidence, shares map[string]float64, u float64) float64 {
	s, n := product(shares), e.Requests
	if !(n+u > 0) {
		return s / (1 - harnessGoal)
	}
	return (s*n + u) / (n + u) / (1 - harnessGoal)
}

// product is the joint's bad share with the objectives independent:
// 1 − Π(1 − b_i).
func product(shares map[string]float64) float64 {
	good := 1.0
	for _, b := range shares {
		good *= 1 - b
	}
	return 1 - good
}

// observed is an Evidence's observed burn rate with the joint's bad share
// taken as joint(BadShares), over the finished requests and, when
// withUnserved, the unserved ones: (s·N + U) / (N + U) / (1 - goal). A
// BurnCheck does not carry the goal; every scenario's is harnessGoal.
func observed(e slo.Evidence, joint func(map[string]float64) float64, withUnserved bool) float64 {
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
func evidenceGate(name string, obs func(slo.Evidence) float64) Policy {
	return Policy{name, func(c pipeline.BurnCheck) bool {
		f := c.Alert.Factor
		return c.Long.Upper > f && c.Short.Upper > f &&
			math.Max(obs(c.LongEvidence), c.Long.Lower) > f && math.Max(obs(c.ShortEvidence), c.Short.Lower) > f
	}}
}

// spreadFirstTokens is the gate before the observed burn charged the slow
// first tokens to the abandoned streams first: every objective's bad share
// over its own histogram's population, TTFT's over every first token, the
// abandoned streams' too.
func spreadFirstTokens() Policy {
	return evidenceGate("upper and evidence, slow first tokens spread over every first token (before)", func(e slo.Evidence) float64 {
		return observedOver(e, e.BadShares, e.Unserved)
	})
}

// summedShares is the gate before the observed burn read the joint as
// independent objectives: the objectives' bad shares summed (counting a
// request bad on two objectives twice), over the SLO's population.
func summedShares() Policy {
	return evidenceGate("upper and evidence, shares summed (earlier)", func(e slo.Evidence) float64 { return observed(e, sum, true) })
}

// finishedOnly is the gate before it followed the SLO's population: the
// upper bound and the observed burn of the finished requests alone (the
// objectives' bad shares summed, without the unserved requests), both above
// the factor in both windows.
func finishedOnly() Policy {
	f := func(c pipeline.BurnCheck) float64 { return c.Alert.Factor }
	obs := func(e slo.Evidence) float64 { return observed(e, sum, false) }
	return Policy{"upper and finished-only observed (earliest)", func(c pipeline.BurnCheck) bool {
		return c.Long.Upper > f(c) && c.Short.Upper > f(c) && obs(c.LongEvidence) > f(c) && obs(c.ShortEvidence) > f(c)
	}}
}

// comparePolicies writes one line per alert with the false and missed pages
// of every candidate policy, when any of them or the truth fired, and adds
// them to totals (by policy name).
func comparePolicies(b *strings.Builder, totals map[string]*Score, run *Run, k Key) {
	var cells []string
	any := len(run.Truth[k]) > 0
	bad := run.Config.SLOs[0].AbandonedPopulation() == slo.AbandonedBad
	for _, p := range candidates(bad) {
		got := run.Replay(k, p)
		any = any || len(got) > 0
		s := score(run.Truth[k], got)
		if totals[p.Name] == nil {
			totals[p.Name] = &Score{}
		}
		totals[p.Name].False += s.False
		totals[p.Name].Missed += s.Missed
		totals[p.Name].Delays = append(totals[p.Name].Delays, s.Delays...)
		totals[p.Name].Resolves = append(totals[p.Name].Resolves, s.Resolves...)
		cells = append(cells, fmt.Sprintf("%s %d/%d", p.Name, s.False, s.Missed))
	}
	if any {
		fmt.Fprintf(b, "  %-16s %-18s %s\n", run.Scenario.Name, k, strings.Join(cells, ", "))
	}
}

// policyTotals writes the candidate policies' false and missed pages summed
// over the runs, in candidates' order.
func policyTotals(totals map[string]*Score) string {
	var b strings.Builder
	b.WriteString("| gate (daemon's checks) | false | missed | detected | fires after the truth, total | resolves after it, total |\n|---|---|---|---|---|---|\n")
	for _, p := range candidates(true) {
		if s := totals[p.Name]; s != nil {
			var late, resolve time.Duration
			for i := range s.Delays {
				late += s.Delays[i]
				resolve += s.Resolves[i]
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %s |\n", p.Name, s.False, s.Missed, len(s.Delays), short(late), short(resolve))
		}
	}
	return b.String()
}

// evidenceError writes, for every evidence variant, how far the page's
// evidence (the larger of the variant's observed burn rate and the lower
// bound) reads from the true burn rate, over both windows of every alert at
// every evaluation where the daemon's check is known, in the runs whose
// exporter clock does not step (there the windows are not the truth's): the
// mean error, the mean absolute error, and the windows where it and the
// truth fall on different sides of the alert's factor (over: the evidence
// above, the truth at or under it, the ingredient of a false page; under:
// the other way round, of a missed one).
func evidenceError(runs []*Run) string {
	type acc struct {
		n, sum, abs float64
		over, under int
	}
	accs := map[string]*acc{}
	names := []string{}
	for _, v := range evidenceVariants(true) {
		accs[v.Name] = &acc{}
		names = append(names, v.Name)
	}
	for _, run := range runs {
		if run.Scenario.StepBy != 0 {
			continue
		}
		bad := run.Config.SLOs[0].AbandonedPopulation() == slo.AbandonedBad
		l := newTrueLedger(run.Requests, daemon.PipelineSpec(run.Config).SLOs[0])
		first := simEpoch().Add(run.Scenario.Lead)
		for _, k := range run.Keys {
			for j, c := range run.Checks[k] {
				if !c.Known {
					continue
				}
				now := first.Add(run.Scrapes[j].Offset)
				for _, w := range []struct {
					length time.Duration
					ev     slo.Evidence
					b      slo.Bounded
				}{{k.Long, c.LongEvidence, c.Long}, {k.Short, c.ShortEvidence, c.Short}} {
					truth, _, ok := l.burn(now.Add(-w.length), now)
					if !ok {
						continue
					}
					for _, v := range evidenceVariants(bad) {
						a, x := accs[v.Name], math.Max(v.Observed(w.ev), w.b.Lower)
						a.n++
						a.sum += x - truth
						a.abs += math.Abs(x - truth)
						switch f := c.Alert.Factor; {
						case x > f && truth <= f:
							a.over++
						case x <= f && truth > f:
							a.under++
						}
					}
				}
			}
		}
	}
	var b strings.Builder
	b.WriteString("| evidence: max(lower bound, observed read as) | windows | mean error | mean absolute error | over the factor, truth not | under it, truth over |\n|---|---|---|---|---|---|\n")
	for _, name := range names {
		a := accs[name]
		fmt.Fprintf(&b, "| %s | %.0f | %+.3f | %.3f | %d | %d |\n", name, a.n, a.sum/math.Max(1, a.n), a.abs/math.Max(1, a.n), a.over, a.under)
	}
	return b.String()
}
