package alertquality

import (
	"fmt"
	"strings"
	"testing"
)

// TestExactModePages plays the library (the fast subset unless -full)
// twice through the daemon's pipeline, from the histograms alone and in
// exact mode (a span for every finished request), and checks exact mode
// against the same targets as TestAlertQuality: no false page beyond the
// scenario's known ones, no missed page. With -v it prints, per alert that
// fired, when each path paged first and by how much exact mode was earlier
// (negative: later); the test fails where exact mode pages later than the
// histograms.
func TestExactModePages(t *testing.T) {
	var table strings.Builder
	table.WriteString("| scenario | alert | truth fires | histograms fire | exact fires | exact earlier by |\n|---|---|---|---|---|---|\n")
	for _, sc := range Library() {
		if sc.Full && !*full {
			continue
		}
		hist, err := Play(sc)
		if err != nil {
			t.Fatal(err)
		}
		exact, err := PlayExact(sc)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range exact.Keys {
			check(t, exact, k, "exact", exact.Daemon[k])
			h, e := hist.Daemon[k], exact.Daemon[k]
			if len(h) == 0 && len(e) == 0 && len(exact.Truth[k]) == 0 {
				continue
			}
			lead := "—"
			if len(h) > 0 && len(e) > 0 {
				d := h[0].From - e[0].From
				lead = fmt.Sprint(d)
				if d < 0 {
					t.Errorf("%s %s: exact mode first pages at %v, the histograms at %v", sc.Name, k, e[0].From, h[0].From)
				}
			}
			fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %s |\n", sc.Name, k, describe(exact.Truth[k]), describe(h), describe(e), lead)
		}
	}
	t.Log("\n" + table.String())
}
