package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// TestGateNeedsEvidence: the page needs the upper bound and the evidence
// (the larger of the lower bound and the observed burn) above the factor in
// both windows; a vacuous upper bound with nothing seen bad never pages,
// and a proven lower bound pages even when the observed burn reads less.
func TestGateNeedsEvidence(t *testing.T) {
	check := func(long, short slo.Bounded, obsLong, obsShort float64) BurnCheck {
		return BurnCheck{Alert: BurnAlert{Factor: 14.4}, Known: true, Long: long, Short: short,
			LongEvidence: slo.Evidence{Observed: obsLong}, ShortEvidence: slo.Evidence{Observed: obsShort}}
	}
	breach := slo.Bounded{Lower: 10, Estimate: 17, Upper: 25}
	for _, c := range []struct {
		name string
		c    BurnCheck
		want bool
	}{
		{"observed above in both", check(breach, breach, 17, 16), true},
		{"vacuous upper bound, nothing seen bad", check(slo.Bounded{Upper: 95}, slo.Bounded{Upper: 95}, 0, 0), false},
		{"short window under the factor", check(breach, breach, 17, 14), false},
		{"upper bound under the factor", check(slo.Bounded{Lower: 1, Estimate: 5, Upper: 14}, breach, 20, 20), false},
		{"proven by the lower bound", check(slo.Bounded{Lower: 15, Estimate: 18, Upper: 22}, slo.Bounded{Lower: 16, Estimate: 18, Upper: 30}, 12, 13), true},
		{"unknown", BurnCheck{Alert: BurnAlert{Factor: 14.4}, Long: breach, Short: breach, LongEvidence: slo.Evidence{Observed: 20}, ShortEvidence: slo.Evidence{Observed: 20}}, false},
	} {
		if got := c.c.Active(); got != c.want {
			t.Errorf("%s: active %v, want %v", c.name, got, c.want)
		}
	}
}

// TestEvidenceAnnotationSaysWhatItRestsOn: the page's evidence annotation
// names, for each window, the objectives' bad shares and the first tokens
// TTFT's is over, the TTFT share charged to the finishers, the unserved
// requests that its observed burn rate comes from, and the abandoned ones
// among them beside the ledger's bracket.
func TestEvidenceAnnotationSaysWhatItRestsOn(t *testing.T) {
	ev := slo.Evidence{Requests: 262, Coverage: 1, Observed: 14.94, Unserved: 45, BadShares: map[string]float64{"ttft": 0.0033, "tpot": 0},
		FinisherTTFT: 0, FirstTokens: 306, Abandoned: 45, Ledger: slo.Bounded{Lower: 29, Estimate: 45, Upper: 60}}
	c := BurnCheck{Alert: BurnAlert{SLO: "interactive", Severity: "page", Long: 5 * time.Minute, Short: time.Minute, Factor: 14.4},
		Known: true, Long: slo.Bounded{Lower: 10, Estimate: 15, Upper: 19}, Short: slo.Bounded{Lower: 10, Estimate: 15, Upper: 19},
		LongEvidence: ev, ShortEvidence: ev}
	got := burnCondition(map[string]string{"target": "sim"}, "m", c).Annotations["evidence"]
	want := "observed 14.94 (bad tpot 0%, ttft 0.33% of 306 first tokens, of finishers' 0%; unserved 45, abandoned 45 (ledger 45 [29, 60]))"
	if !strings.Contains(got, want) {
		t.Errorf("evidence annotation %q, want it to contain %q", got, want)
	}
}
