package benchreport

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity/online"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/history"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/recording"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/replay"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// DefaultCapacityGoal is the goal of the SLO the capacity comparison
// judges (--capacity-goal): the share of requests that must meet every
// --goodput objective.
const DefaultCapacityGoal = 0.99

// Capacity sets a request-rate sweep's knee beside the capacity the daemon
// would learn online from a recording of the same server, judged by one
// SLO: every --goodput objective for Goal of the requests. The two are the
// same quantity measured two ways: offline, by holding each rate constant;
// online, from the load the server happened to see (docs/capacity.md).
type Capacity struct {
	Goal float64 `json:"goal"`
	// Rates are the sweep's offered request rates, ascending, and
	// Attainment the share of each point's completed requests that met
	// every objective (vLLM's good requests over completed ones).
	Rates      []Num `json:"rates"`
	Attainment []Num `json:"attainment"`
	// OfflineKnee is the highest rate at which the non-increasing fit of
	// the attainments (pool adjacent violators, each point weighted by its
	// completed requests) is at least Goal, linear between the two rates
	// around the crossing: NaN when the lowest rate misses the goal, +Inf
	// when no rate does (sweep further).
	OfflineKnee Num `json:"offline_knee_requests_per_second"`
	// GoodputKnee is the rate of the sweep's goodput-maximal point (the
	// sweep table's knee), NaN without one.
	GoodputKnee Num `json:"goodput_knee_requests_per_second"`
	// Online is the estimate of each target's model in the recording.
	Online []OnlineCapacity `json:"online"`
}

// OnlineCapacity is one model's capacity learned from the recording.
type OnlineCapacity struct {
	Target string `json:"target"`
	Model  string `json:"model"`
	// Kind is bounded, lower_only or unknown (capacity.Kind); Reason says
	// why it is not bounded.
	Kind   string `json:"kind"`
	Reason string `json:"reason,omitempty"`
	// Estimate, Lower and Upper are the capacity (req/s) and the ends of
	// its 90% prediction interval.
	Estimate Num `json:"requests_per_second"`
	Lower    Num `json:"lower_requests_per_second"`
	Upper    Num `json:"upper_requests_per_second"`
	// Windows is how many two-minute windows it was fitted from.
	Windows int `json:"windows"`
}

// NewCapacity compares sweep with the recording's entries, for the SLO of
// objs at goal. The sweep must vary the request rate, with at least two
// finite rates and goodput objectives.
func NewCapacity(sweep Sweep, entries []recording.Entry, objs []Objective, goal float64) (*Capacity, error) {
	if sweep.Load != LoadRate {
		return nil, errors.New("capacity: the sweep varies max_concurrency, not the request rate")
	}
	if !(goal > 0 && goal < 1) {
		return nil, fmt.Errorf("capacity: goal %v is not in (0, 1)", goal)
	}
	c := &Capacity{Goal: goal, OfflineKnee: Num(math.NaN()), GoodputKnee: Num(math.NaN())}
	var weights []float64
	for _, p := range sweep.Points {
		r := float64(p.RequestRate)
		if math.IsInf(r, 0) || !(r > 0) || p.Goodput == nil || p.Completed == 0 {
			continue
		}
		c.Rates = append(c.Rates, Num(r))
		c.Attainment = append(c.Attainment, Num(float64(p.Goodput.GoodRequests)/float64(p.Completed)))
		weights = append(weights, float64(p.Completed))
	}
	if len(c.Rates) < 2 {
		return nil, errors.New("capacity: the sweep needs at least two finite request rates with goodput objectives")
	}
	if sweep.Knee >= 0 {
		c.GoodputKnee = sweep.Points[sweep.Knee].RequestRate
	}
	c.OfflineKnee = Num(crossingOf(c.Rates, nonIncreasing(c.Attainment, weights), goal))
	learned, err := learnOnline(entries, objs, goal)
	if err != nil {
		return nil, err
	}
	c.Online = learned
	return c, nil
}

// nonIncreasing is the weighted least-squares non-increasing fit of y
// (pool adjacent violators): attainment cannot rise with load on one
// server and mix, so a rise between two rates is noise.
func nonIncreasing(y []Num, w []float64) []float64 {
	type block struct {
		sum, w float64
		n      int
	}
	var bs []block
	for i, v := range y {
		bs = append(bs, block{float64(v) * w[i], w[i], 1})
		for k := len(bs) - 1; k > 0 && bs[k-1].sum/bs[k-1].w < bs[k].sum/bs[k].w; k-- {
			bs[k-1] = block{bs[k-1].sum + bs[k].sum, bs[k-1].w + bs[k].w, bs[k-1].n + bs[k].n}
			bs = bs[:k]
		}
	}
	out := make([]float64, 0, len(y))
	for _, b := range bs {
		for range b.n {
			out = append(out, b.sum/b.w)
		}
	}
	return out
}

// crossingOf is the highest x at which the non-increasing f, linear
// between points, is at least goal: NaN when f[0] is below it, +Inf when
// no point is.
func crossingOf(x []Num, f []float64, goal float64) float64 {
	if f[0] < goal {
		return math.NaN()
	}
	for i := 1; i < len(f); i++ {
		if f[i] < goal {
			x0, x1 := float64(x[i-1]), float64(x[i])
			return x0 + (f[i-1]-goal)/(f[i-1]-f[i])*(x1-x0)
		}
	}
	return math.Inf(1)
}

// capacityRetention is the history the online learning keeps: the
// learners keep their own windows, so the history needs only enough for
// the pipeline's one window.
var capacityRetention = history.NewRetention(10*time.Minute, time.Hour)

// learnOnline replays the recording through a pipeline whose closed
// intervals feed the daemon's capacity learners, and returns each model's
// estimate at the last scrape.
func learnOnline(entries []recording.Entry, objs []Objective, goal float64) ([]OnlineCapacity, error) {
	slos := SLOOf(objs)
	if len(slos) == 0 || len(entries) == 0 {
		return nil, errors.New("capacity: needs --goodput objectives and a recording")
	}
	slos[0].Name, slos[0].Goal, slos[0].Period = "capacity", goal, 24*time.Hour
	learners := online.New(nil)
	spec := pipeline.Spec{SLOs: slos, Windows: []time.Duration{time.Minute}, Quantiles: []float64{0.5}, Retention: capacityRetention, Intervals: learners}
	last := entries[0].Time
	for _, e := range entries {
		if !slices.ContainsFunc(spec.Targets, func(t pipeline.TargetSpec) bool { return t.Name == e.Target }) {
			spec.Targets = append(spec.Targets, pipeline.TargetSpec{Name: e.Target, Profile: scrape.VLLM})
		}
		last = maxTime(last, e.Time)
	}
	p := pipeline.New(spec)
	for _, e := range entries {
		_ = replay.Ingest(p, e) // unusable scrapes are listed in the server table's notes
	}
	learners.Refit(p.Evaluate(last))
	var out []OnlineCapacity
	for _, r := range learners.Reports() {
		e := r.Estimate
		oc := OnlineCapacity{Target: r.Target, Model: r.Model, Kind: string(e.Kind), Reason: e.Reason, Windows: e.Windows,
			Estimate: Num(math.NaN()), Lower: Num(math.NaN()), Upper: Num(math.NaN())}
		if e.Kind != capacity.Unknown {
			oc.Estimate, oc.Lower, oc.Upper = Num(e.Requests.Estimate), Num(e.Requests.Lower), Num(e.Requests.Upper)
		}
		out = append(out, oc)
	}
	return out, nil
}

// CapacityTable is the comparison as a table: the sweep's two knees, then
// each model's online estimate with its interval.
func CapacityTable(c Capacity) Table {
	t := Table{Title: fmt.Sprintf("Capacity: the sweep's knee beside the online estimate (SLO: every --goodput objective for %s of requests)", fmtG(100*c.Goal)+"%"),
		Header: []string{"", "req/s", "from"}}
	t.Rows = append(t.Rows,
		[]string{"offline: highest rate meeting the goal", kneeText(float64(c.OfflineKnee)), "the sweep's attainment per rate, non-increasing fit, linear between rates"},
		[]string{"offline: most goodput", f2(float64(c.GoodputKnee)), "the sweep table's knee"})
	for _, o := range c.Online {
		v := "-"
		switch o.Kind {
		case string(capacity.Bounded):
			v = fmt.Sprintf("%s [%s, %s]", f2(float64(o.Estimate)), f2(float64(o.Lower)), f2(float64(o.Upper)))
		case string(capacity.LowerOnly):
			v = "≥ " + f2(float64(o.Lower))
		}
		t.Rows = append(t.Rows, []string{"online: " + o.Target + "/" + o.Model + " (" + o.Kind + ")", v,
			fmt.Sprintf("the recording, %d two-minute windows, 90%% prediction interval", o.Windows)})
		if o.Reason != "" {
			t.Notes = append(t.Notes, o.Target+"/"+o.Model+": "+o.Reason)
		}
	}
	var at []string
	for i := range c.Rates {
		at = append(at, fmtG(float64(c.Rates[i]))+": "+fmt.Sprintf("%.4f", float64(c.Attainment[i])))
	}
	t.Notes = append(t.Notes, "attainment per rate: "+strings.Join(at, ", "))
	return t
}

// kneeText is a knee's rate, or why there is none.
func kneeText(v float64) string {
	switch {
	case math.IsNaN(v):
		return "below the lowest rate"
	case math.IsInf(v, 1):
		return "above the highest rate"
	}
	return f2(v)
}
