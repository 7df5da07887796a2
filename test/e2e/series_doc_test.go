package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

// TestSeriesDocumented: every family the replay goldens print is in the
// series reference, docs/series.md, so that a new series cannot ship
// undocumented. A bound family (vllm_slo_latency_lower_seconds) counts as
// documented with its estimate, whose row says "(+ `_lower_`, `_upper_`)",
// and so does a suffixed one (vllm_slo_burn_rate_upper, "(+ `_lower`,
// `_upper`)").
func TestSeriesDocumented(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no replay goldens (%v)", err)
	}
	families := map[string]string{} // family -> a golden that prints it
	for _, g := range goldens {
		f, err := os.Open(g)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) >= 3 && fields[0] == "#" && fields[1] == "TYPE" {
				families[fields[2]] = g
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	checkDocumented(t, families)
}

// TestCapacitySeriesDocumented: the capacity families a bounded answer
// prints (its interval, its time to breach, the method that placed it) are
// in the series reference too. No replay golden holds a bounded answer,
// so TestSeriesDocumented cannot see them.
func TestCapacitySeriesDocumented(t *testing.T) {
	since := time.Unix(1_700_000_000, 0)
	r := capacity.Range{Estimate: 6, Lower: 5.5, Upper: 6.5}
	bounded := capacity.Estimate{Kind: capacity.Bounded, Method: capacity.Gumbel, Since: since, Load: 3,
		Requests: r, Tokens: r, Concurrency: r, Headroom: capacity.Range{Estimate: 0.5, Lower: 0.4, Upper: 0.6},
		HasBreach: true, TimeToBreach: time.Hour, TimeToBreachLower: time.Hour / 2}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(exporter.NewCollector(func() *pipeline.Report {
		return &pipeline.Report{Capacity: []capacity.Report{{Target: "a", Model: "m", SLO: "s", Estimate: bounded}}}
	}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]string{}
	for _, mf := range mfs {
		families[mf.GetName()] = "a bounded capacity answer"
	}
	if len(families) < 10 {
		t.Fatalf("a bounded answer printed %d capacity families, want every one", len(families))
	}
	checkDocumented(t, families)
}

// checkDocumented fails on every family (name -> where it was printed) that
// docs/series.md does not name, its estimate's row counting for a bound
// family ("(+ `_lower_`, `_upper_`)") and for an earliest one ("(+
// `_earliest_`)").
func checkDocumented(t *testing.T, families map[string]string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "series.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(vllm_slo_[a-z_]+)").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	bound := regexp.MustCompile(`^(vllm_slo_[a-z_]+?)_(lower|upper|earliest)(_[a-z_]+)?$`)
	for fam, g := range families {
		if !strings.HasPrefix(fam, "vllm_slo_") || documented[fam] {
			continue
		}
		if m := bound.FindStringSubmatch(fam); m != nil && documented[m[1]+m[3]] {
			continue
		}
		t.Errorf("%s (printed in %s) is not in docs/series.md", fam, g)
	}
}
