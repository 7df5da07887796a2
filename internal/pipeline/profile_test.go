package pipeline

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// TestProfileMatchingNothingWarns feeds a real SGLang exposition to a target
// configured with the vLLM profile: the scrape succeeds, so the target is
// up, and the report must say that nothing of the profile was found (once,
// as a lasting warning the daemon logs once and the landing page shows).
// With the right profile the warning is gone.
func TestProfileMatchingNothingWarns(t *testing.T) {
	body, err := os.ReadFile("../../scrape/testdata/real/06-datadog-sglang-0.5.10.prom")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		profile scrape.Profile
		warned  bool
	}{{scrape.VLLM, true}, {scrape.SGLang, false}} {
		t.Run(c.profile.Name, func(t *testing.T) {
			spec := testSpec(t)
			spec.Targets[0].Profile = c.profile
			p := New(spec)
			var rep *Report
			for i := range 2 {
				at := start.Add(time.Duration(i+1) * 15 * time.Second)
				snap, err := scrape.Parse(body, "", c.profile, at)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Ingest("gpu0", snap, 0); err != nil {
					t.Fatal(err)
				}
				rep = p.Evaluate(at)
			}
			tr := rep.Targets[0]
			if !tr.Up {
				t.Fatalf("target not up: %s", tr.LastError)
			}
			warned := slices.ContainsFunc(tr.Warnings, func(w string) bool {
				return strings.Contains(w, `none of the families of profile "vllm"`)
			})
			if warned != c.warned {
				t.Errorf("warnings %q: profile-mismatch warning %v, want %v", tr.Warnings, warned, c.warned)
			}
		})
	}
}
