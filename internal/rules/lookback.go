package rules

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// lookback is how far back the ledger looks for a series' latest sample:
// Prometheus's default lookback delta, written out in the rules.
const lookback = 5 * time.Minute

// latest selects the latest sample of a series at or before offset before
// now, within lookback: last_over_time(sel[4m59s999ms] offset d).
//
// A bare selector would do the same on Prometheus over backfilled data, but
// not everywhere the rules run:
//   - VictoriaMetrics (MetricsQL) gives a bare selector a lookbehind of
//     about one query step (vmalert's -datasource.queryStep: 5m live, the
//     group interval in replay), not Prometheus's 5m lookback, so after a
//     failed scrape the sample an interval ago is missing and the change
//     across the gap was dropped;
//   - a live Prometheus writes staleness markers when a scrape fails, after
//     which a bare selector returns nothing, and again the change across
//     the gap was dropped. last_over_time skips staleness markers.
//
// With an explicit range both engines pick the same sample, and consecutive
// evaluations telescope across gaps shorter than lookback.
//
// The range is a millisecond short of lookback: Prometheus 2 includes a
// sample exactly at its start, Prometheus 3 and VictoriaMetrics do not, and
// after a 5-minute outage the last sample before it lies exactly there
// (the outage scenario differed by 0.12 on a 1m window until the range was
// shortened).
func latest(sel string, offset time.Duration) string {
	r := model.Duration(lookback - time.Millisecond)
	if offset <= 0 {
		return fmt.Sprintf("last_over_time(%s[%s])", sel, r)
	}
	return fmt.Sprintf("last_over_time(%s[%s] offset %s)", sel, r, model.Duration(offset))
}
