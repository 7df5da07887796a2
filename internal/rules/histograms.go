package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
)

// AlertHistogramsMissing fires in Prometheus only: a vLLM histogram the
// rules read is stored as a native histogram without its classic series.
const AlertHistogramsMissing = "VLLMSLOHistogramsMissing"

// classicSeries matches the classic series of a histogram in an expression:
// the family name before _bucket or _count.
var classicSeries = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)_(?:bucket|count)\b`)

// classicFamilies lists, sorted, the histogram families whose classic
// series (_bucket, _count) the groups' rules read.
func classicFamilies(groups []Group) []string {
	var names []string
	for _, g := range groups {
		for _, r := range g.Rules {
			for _, m := range classicSeries.FindAllStringSubmatch(r.Expr, -1) {
				names = append(names, m[1])
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// histogramsMissingRule is the alert that says why the SLO series are
// gone when Prometheus stores vLLM's histograms as native histograms only:
// with convert_classic_histograms_to_nhcb (Prometheus 3) and without
// always_scrape_classic_histograms, a family is one series of native
// histogram samples under its bare name, and its _bucket and _count series,
// which every SLO rule reads, do not exist. The rules then record nothing
// for the model, and nothing else fires: its burn-rate alerts cannot.
//
// The condition is per family and model: the bare name's series (which
// only a native histogram has; a classic histogram's series all carry a
// suffix) that have no _count series with the same labels (set operations
// match label sets without the metric name), counted per model. It is
// empty on Prometheus 2 without native histograms, and while the classic
// series are scraped beside the native ones. Its hold is three scrape
// intervals, as the target-down alert's: the condition comes from the
// scrape configuration and does not flap.
//
// Why an alert and not rules that read native histograms too: the
// per-interval ledger needs, per bucket edge, the exact count at two
// instants, and the decode-time reach min_over_time of the count over a
// range, which on a native histogram takes a subquery per rule; written
// for both kinds with `or`, every rule's expression would double, and the
// two spellings could disagree for the five minutes of lookback after a
// scrape configuration changes. Scraping the classic series beside the
// native ones costs the series the rules read today and nothing else.
func histogramsMissingRule(cfg *config.Config, families []string) (Rule, bool) {
	if len(families) == 0 {
		return Rule{}, false
	}
	parts := make([]string, len(families))
	for i, n := range families {
		parts[i] = fmt.Sprintf("label_replace(count by (model_name) (%[1]s unless %[1]s_count), \"histogram\", %[2]q, \"\", \"\")", n, n)
	}
	return Rule{
		Alert:  AlertHistogramsMissing,
		Expr:   strings.Join(parts, "\nor\n"),
		For:    model.Duration(targetDownHold(cfg)),
		Labels: map[string]string{"severity": "page"},
		Annotations: map[string]string{
			"summary": "vLLM histogram {{ $labels.histogram }} of model {{ $labels.model_name }} is stored as a native histogram only: the SLO rules record nothing for this model",
			"description": "Prometheus stores {{ $labels.histogram }} as a native histogram ({{ $value }} series) without its classic _bucket and _count series: " +
				"its scrape job converts classic histograms (convert_classic_histograms_to_nhcb) or scrapes native ones, and always_scrape_classic_histograms is off. " +
				"The generated SLO rules read the classic series, so they record nothing for this model and its burn-rate alerts cannot fire. " +
				"Set always_scrape_classic_histograms: true on the vLLM scrape job (the native histogram is kept beside the classic series).",
		},
		Comment: "The generated rules read the classic series of these histograms; stored as native histograms only\n" +
			"(Prometheus 3's convert_classic_histograms_to_nhcb without always_scrape_classic_histograms),\n" +
			"they have none, and every SLO series of the model is absent: this alert says why.",
	}, true
}
