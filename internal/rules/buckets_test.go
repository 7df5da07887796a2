package rules

import (
	"strings"
	"testing"
)

// TestCustomEdgesReachTheRules: with global.histogram_buckets giving the
// servers' custom edges, an SLO's thresholds that are edges there are read
// at those edges (exact), where vLLM's defaults make the rules round down
// to the next default edge. The rules cannot read a scrape's buckets, so
// this configuration is how custom edges reach them.
func TestCustomEdgesReachTheRules(t *testing.T) {
	const slos = `
targets: [{name: a, url: "http://127.0.0.1:8000/metrics"}]
slos:
  - {name: tight, objectives: {ttft: 200ms, e2e: 3s}, goal: 0.99, period: 30d}
`
	custom := "global: {histogram_buckets: {time_to_first_token: [0.05, 0.2, 0.8], request_latency: [1, 3, 10]}}\n" + slos
	for _, tc := range []struct {
		name      string
		yaml      string
		want, not []float64
	}{
		{"vLLM's defaults", slos, []float64{0.1, 2.5}, []float64{0.2, 3}},
		{"custom edges", custom, []float64{0.2, 3}, []float64{0.1, 2.5}},
	} {
		rf, err := DefaultOptions().Generate(parseConfig(t, tc.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, err := rf.YAML()
		if err != nil {
			t.Fatal(err)
		}
		// The YAML writes each backslash of a regular expression twice.
		out := strings.ReplaceAll(string(b), `\\`, `\`)
		for _, e := range tc.want {
			if !strings.Contains(out, `le=~"`+leRegex(e)+`"`) {
				t.Errorf("%s: no rule reads the bucket le=%v", tc.name, e)
			}
		}
		for _, e := range tc.not {
			if strings.Contains(out, `le=~"`+leRegex(e)+`"`) {
				t.Errorf("%s: a rule reads le=%v, which the servers do not have", tc.name, e)
			}
		}
	}
}
