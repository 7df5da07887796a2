package capacity

import (
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

// Interval is what one scrape interval of one model says about load and
// service, as the per-interval ledger knows it. Counts are of the interval
// (Start, End]; gauges are read at its two scrapes.
type Interval struct {
	Start, End time.Time
	// FirstTokens is the TTFT histogram's increase: requests that got their
	// first token in the interval.
	FirstTokens float64
	// WaitingStart and WaitingEnd are vLLM's waiting gauge at the two
	// scrapes; RunningStart and RunningEnd its running gauge. With first
	// tokens they give the arrivals (see Arrivals).
	WaitingStart, WaitingEnd float64
	RunningStart, RunningEnd float64
	// InFlightMean is running + waiting averaged over the interval's scrapes.
	InFlightMean float64
	// Finished is the number of requests that finished in the interval, the
	// population whose attainment Good bounds.
	Finished float64
	// Good bounds the finished requests that met every objective of the SLO
	// (its `all`), with the ledger's estimate; GoodKnown is false when an
	// objective could not be judged.
	Good      slo.Bounded
	GoodKnown bool
	// GeneratedTokens is the increase of the generation-token counter
	// (tokens produced in the interval, by finished and running requests).
	GeneratedTokens float64
	// PromptTokens and OutputTokens sum the prompt and output lengths of the
	// finished requests (the token histograms' sums); Mixed is false when
	// the target lacks those histograms.
	PromptTokens, OutputTokens float64
	Mixed                      bool
	// TTFT and TPOT are the increases of the two histograms' sums and
	// counts, for the mean-based baseline.
	TTFT, TPOT Mean
	// Restarted is true when vLLM restarted inside the interval.
	Restarted bool
}

// Mean is a histogram's sum and count over an interval.
type Mean struct{ Sum, Count float64 }

// Value is Sum/Count, 0 without observations.
func (m Mean) Value() float64 {
	if m.Count <= 0 {
		return 0
	}
	return m.Sum / m.Count
}

// Arrivals is the number of requests that arrived in the interval: the
// first tokens plus the growth of the waiting queue. A request admitted to
// a step but not yet through its prefill at a scrape is in neither, so each
// interval's count is off by at most the prompts in prefill at its two
// scrapes (a step's admissions), and over a run of intervals those errors
// cancel but at its ends. Requests that leave the queue before their first
// token (cancelled, or preempted and waiting again) are missed.
func (iv Interval) Arrivals() float64 {
	return max(0, iv.FirstTokens+iv.WaitingEnd-iv.WaitingStart)
}

// Seconds is the interval's length.
func (iv Interval) Seconds() float64 { return iv.End.Sub(iv.Start).Seconds() }
