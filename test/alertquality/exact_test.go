package alertquality

import (
	"fmt"
	"strings"
	"testing"
)

// TestExactModePages plays the library (the fast subset unless -full)
// twice through the daemon's pipeline, from the histograms alone and in
// exact mode (a span for every finished request), and holds exact mode to
// the harness's targets: no missed page, no false page beyond the
// scenario's known ones (exact mode may have fewer), and a first page no
// later than the truth's nor than the histograms' unless the histograms
// paged before the truth did (their upper bound crossed the factor first).
// With -v it prints, per alert, when each path fired and how much earlier
// exact mode first paged than the histograms (negative: later).
func TestExactModePages(t *testing.T) {
	t.Parallel()
	var table strings.Builder
	table.WriteString("| scenario | alert | truth fires | histograms fire | exact fires | false: histograms / exact | exact earlier by |\n|---|---|---|---|---|---|---|\n")
	for _, sc := range Library() {
		if sc.Full && !*full {
			continue
		}
		hist, err := playShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		exact, err := playExactShared(sc)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range exact.Keys {
			want, h, e := exact.Truth[k], hist.Daemon[k], exact.Daemon[k]
			hs, es := score(want, h), score(want, e)
			if es.Missed > 0 || es.False > sc.Known[k.String()].False {
				t.Errorf("%s %s exact: truth %s, got %s: %d false (%d known), %d missed", sc.Name, k, describe(want), describe(e), es.False, sc.Known[k.String()].False, es.Missed)
			}
			if len(want) == 0 && len(h) == 0 && len(e) == 0 {
				continue
			}
			lead := "—"
			if len(h) > 0 && len(e) > 0 {
				lead = fmt.Sprint(h[0].From - e[0].From)
				if e[0].From > h[0].From && (len(want) == 0 || h[0].From >= want[0].From) {
					t.Errorf("%s %s: exact mode first pages at %v, the histograms at %v (truth %s)", sc.Name, k, e[0].From, h[0].From, describe(want))
				}
			}
			if len(want) > 0 && len(e) > 0 && e[0].From > want[0].From {
				t.Errorf("%s %s: exact mode first pages at %v, after the truth (%v)", sc.Name, k, e[0].From, want[0].From)
			}
			fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %d / %d | %s |\n", sc.Name, k, describe(want), describe(h), describe(e), hs.False, es.False, lead)
		}
	}
	t.Log("\n" + table.String())
}
