package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSeriesDocumented: every family the replay goldens print is in the
// series reference, docs/series.md, so that a new series cannot ship
// undocumented. A bound family (vllm_slo_latency_lower_seconds) counts as
// documented with its estimate, whose row says "(+ `_lower_`, `_upper_`)",
// and so does a suffixed one (vllm_slo_burn_rate_upper, "(+ `_lower`,
// `_upper`)").
func TestSeriesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "series.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(vllm_slo_[a-z_]+)").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
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
	bound := regexp.MustCompile(`^(vllm_slo_[a-z_]+?)_(lower|upper)(_[a-z_]+)?$`)
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
