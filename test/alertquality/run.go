package alertquality

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/daemon"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/traces"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/simtruth"
)

// ConfigYAML is the exporter configuration every scenario runs unless it
// names its own (Scenario.Config): the demo's interactive SLO over a 1-day
// period, so that the workbook's policy scaled to it (page 5m/1m at 14.4x,
// page 12m/1m at 6x, ticket 2h24m/12m at 1x) plays out within a simulated
// hour or two. Abandoned requests count bad (the default).
var ConfigYAML = SLOConfig("1d", "", "")

// SLOConfig is the exporter configuration of a scenario: the demo target and
// the interactive SLO (TTFT <= 500ms, TPOT <= 50ms unless objectives says
// otherwise, as YAML flow mapping; goal harnessGoal) over period, with its
// `abandoned` policy (empty: the default) and the default alert policy
// scaled to the period.
func SLOConfig(period, abandoned, objectives string) string {
	if objectives == "" {
		objectives = "{ttft: 500ms, tpot: 50ms}"
	}
	extra := ""
	if abandoned != "" {
		extra = "\n    abandoned: " + abandoned
	}
	return fmt.Sprintf(`global:
  scrape_interval: 15s
  windows: [1m, 5m]
targets:
  - name: sim
    url: http://127.0.0.1:8000/metrics
slos:
  - name: interactive
    objectives: %s
    goal: %v
    period: %s%s
`, objectives, harnessGoal, period, extra)
}

// harnessGoal is the goal of every scenario's SLO.
const harnessGoal = 0.99

// Interval is the scrape and evaluation interval of every scenario.
const Interval = 15 * time.Second

// targetName is the name of the one target in ConfigYAML.
const targetName = "sim"

// Scrape is one scrape of the simulated vLLM as the exporter took it, and
// the evaluation on the regular grid that it belongs to.
type Scrape struct {
	// Offset is the evaluation's nominal real time since the first one
	// (a multiple of Interval); At is that evaluation's time on the
	// exporter's clock: the daemon and the rules evaluate there.
	Offset time.Duration
	At     time.Time
	// Taken is when the scrape was taken on the exporter's clock: At moved
	// by the scrape's jitter (see ScrapeJitter), its samples' timestamp.
	Taken time.Time
	// Body is the exposition, nil when the scrape failed.
	Body        []byte
	ContentType string
}

// ScrapeJitter is how far from its nominal time every scrape is taken, at
// most, as a share of Interval: a live scraper's ticks drift with its load
// and never line up with the evaluations, so each scrape is moved by an
// amount drawn uniformly within ±ScrapeJitter×Interval (to the
// millisecond, seeded: runs are reproducible). The evaluations, the
// daemon's and the rule manager's, stay on the regular grid.
const ScrapeJitter = 0.2

// jitters is, for n scrapes of the scenario named name, how far from its
// nominal time each is taken: uniform within ±ScrapeJitter×Interval, to
// the millisecond, drawn from a generator seeded with seed and the name.
func jitters(name string, n int) []time.Duration {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	most := int64(ScrapeJitter * float64(Interval/time.Millisecond))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(rng.Int64N(2*most+1)-most) * time.Millisecond
	}
	return out
}

// Run is one scenario played through the daemon's pipeline.
type Run struct {
	Scenario Scenario
	Config   *config.Config
	// Scrapes are every scrape, failed or not, in order.
	Scrapes []Scrape
	// Truth, Daemon and Rules are, per alert (Key), the firing episodes;
	// Rules is nil until Prometheus.EvaluateRules fills it.
	Truth, Daemon, Rules map[Key][]Episode
	// DaemonLabels and RuleLabels are, per alert, the label sets each path
	// fired with (as Alertmanager would see them), keyed by their text.
	DaemonLabels, RuleLabels map[Key]map[string]bool
	// Condition is, per alert and evaluation, whether the truth's page
	// condition held (both windows above the factor, before `for`).
	Condition map[Key][]bool
	// VMRules and VMRuleLabels are the same for the rules replayed by
	// vmalert on VictoriaMetrics; nil until Victoria.VMAlerts fills them.
	VMRules      map[Key][]Episode
	VMRuleLabels map[Key]map[string]bool
	// Keys lists the alerts in policy order.
	Keys []Key
	// TargetDown are the episodes of the daemon's target-down alert.
	TargetDown []Episode
	// Checks holds, per alert, the daemon's burn check at every evaluation
	// (zero while the model is unknown), for scoring other policies.
	Checks map[Key][]pipeline.BurnCheck
	// For is each alert's hold.
	For map[Key]time.Duration
	// Requests is the simulator's truth for the served model: every
	// request, finished, abandoned or lost.
	Requests sim.Truth
}

// Key names one alert of the policy: severity and windows.
type Key struct {
	Severity    string
	Long, Short time.Duration
}

func (k Key) String() string {
	return fmt.Sprintf("%s %s/%s", k.Severity, model.Duration(k.Long), model.Duration(k.Short))
}

// LoadConfig parses a scenario's configuration (ConfigYAML when it names
// none).
func LoadConfig(sc Scenario) (*config.Config, error) {
	text := sc.Config
	if text == "" {
		text = ConfigYAML
	}
	cfg, err := config.Parse([]byte(text), "alertquality.yaml")
	if err != nil {
		return nil, fmt.Errorf("alert-quality configuration: %w", err)
	}
	return cfg, nil
}

// simEpoch is when every scenario's simulated server starts; its first
// scrape is Scenario.Lead later.
func simEpoch() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// errDown is the failure the exporter records while vLLM is down.
var errDown = errors.New("connection refused")

// Play runs a scenario through the pipeline on a virtual clock and computes
// the truth's alerts from the simulator's records.
func Play(sc Scenario) (*Run, error) { return play(sc, false) }

// PlayExact is Play in exact mode: vLLM's span of every finished request
// reaches the pipeline's trace store as the request finishes, on the
// simulator's clock (a scenario that steps the exporter's clock leaves the
// spans off its time line, and those intervals on the histograms).
func PlayExact(sc Scenario) (*Run, error) { return play(sc, true) }

func play(sc Scenario, exact bool) (*Run, error) {
	cfg, err := LoadConfig(sc)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	sp := daemon.PipelineSpec(cfg)
	simStart := simEpoch()
	simCfg := sc.Sim(simStart)
	if exact {
		clock := simStart
		sp.Traces = traces.NewStore(traces.Limits{Retain: 2 * time.Hour, MaxRecords: 1 << 22, Now: func() time.Time { return clock }})
		simCfg.OnDone = func(r sim.Request) {
			if r.Finish.After(clock) {
				clock = r.Finish
			}
			if r.Finished() {
				sp.Traces.Add([]traces.Span{{Target: targetName, Model: r.Model, RequestID: fmt.Sprint(r.ID), End: r.Finish,
					TTFT: r.TTFT(), E2E: r.E2E(), Queue: r.QueueTime(), Prefill: r.PrefillTime(), Decode: r.DecodeTime(),
					Inference: r.InferenceTime(), PromptTokens: r.PromptTokens, CompletionTokens: r.OutputTokens, CachedTokens: -1}})
			}
		}
	}
	s, err := sim.New(simCfg)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	run := &Run{Scenario: sc, Config: cfg, Daemon: map[Key][]Episode{}, Truth: map[Key][]Episode{},
		Checks: map[Key][]pipeline.BurnCheck{}, For: map[Key]time.Duration{}, DaemonLabels: map[Key]map[string]bool{},
		Condition: map[Key][]bool{}}
	for _, a := range sp.Alerts {
		k := Key{a.Severity, a.Long, a.Short}
		run.Keys = append(run.Keys, k)
		run.For[k] = a.For
	}
	p := pipeline.New(sp)
	first := simStart.Add(sc.Lead)
	firing := map[Key][]bool{}
	var down []bool
	jit := jitters(sc.Name, int(sc.Length/Interval)+1)
	var evals, taken []time.Time
	for i, j := range jit {
		off := time.Duration(i) * Interval
		// The evaluation at off reads the scrapes taken at or before it:
		// this one when it came early, else up to the one before.
		if j <= 0 {
			if err := run.scrapeOnce(p, s, off, j, first); err != nil {
				return nil, err
			}
		}
		s.AdvanceTo(first.Add(off))
		fired, isDown := run.noteEvaluation(p.Evaluate(run.exporterClock(first, off)))
		for _, k := range run.Keys {
			firing[k] = append(firing[k], fired[k])
		}
		down = append(down, isDown)
		if j > 0 {
			if err := run.scrapeOnce(p, s, off, j, first); err != nil {
				return nil, err
			}
		}
		evals, taken = append(evals, first.Add(off)), append(taken, first.Add(off+j))
	}
	for _, k := range run.Keys {
		run.Daemon[k] = episodes(firing[k])
	}
	run.TargetDown = episodes(down)
	truth := simtruth.ForModel(s.Truth(), sim.DemoModel)
	run.Requests = truth
	ledger := newTrueLedger(truth, sp.SLOs[0])
	for i, a := range sp.Alerts {
		k := run.Keys[i]
		run.Condition[k] = trueCondition(ledger, a, evals, taken)
		run.Truth[k] = episodes(hold(run.Condition[k], a.For))
	}
	return run, nil
}

// realTimes are the real times of the run's evaluations and of its
// scrapes, one each per evaluation, in order (the exporter's clock, which
// a scenario may step, aside).
func (run *Run) realTimes() (evals, taken []time.Time) {
	first := simEpoch().Add(run.Scenario.Lead)
	for _, s := range run.Scrapes {
		evals = append(evals, first.Add(s.Offset))
		taken = append(taken, first.Add(s.Offset+s.Taken.Sub(s.At)))
	}
	return evals, taken
}

// exporterClock is the exporter's clock at the real time off after first:
// moved by the scenario's step from StepAt on.
func (run *Run) exporterClock(first time.Time, off time.Duration) time.Time {
	sc := run.Scenario
	at := first.Add(off)
	if sc.StepBy != 0 && off >= sc.StepAt {
		at = at.Add(sc.StepBy)
	}
	return at
}

// scrapeOnce advances the simulator to the scrape due at offset off from
// first, taken jitter from there, and feeds the pipeline that scrape (or,
// while vLLM is down or the scenario fails it, a failure), at the
// exporter's clock, which a scenario may step; it keeps the scrape in run.
func (run *Run) scrapeOnce(p *pipeline.Pipeline, s *sim.Sim, off, jitter time.Duration, first time.Time) error {
	sc := run.Scenario
	at := run.exporterClock(first, off)
	taken := at.Add(jitter)
	s.AdvanceTo(first.Add(off + jitter))
	sample := Scrape{Offset: off, At: at, Taken: taken}
	if !s.Serving() || (sc.Failed != nil && sc.Failed(off)) {
		p.RecordFailure(targetName, "timeout", errDown, taken, 0)
	} else {
		sample.Body, sample.ContentType = s.Exposition()
		snap, err := scrape.Parse(sample.Body, sample.ContentType, scrape.VLLM, taken)
		if err != nil {
			return fmt.Errorf("scenario %s: parse at %v: %w", sc.Name, off, err)
		}
		// A refused snapshot (the clock stepped back) counts as a failure
		// inside Ingest, as in the daemon.
		_ = p.Ingest(targetName, snap, 0)
	}
	run.Scrapes = append(run.Scrapes, sample)
	return nil
}

// noteEvaluation reads one evaluation: which burn-rate alerts fire (their
// label sets kept in run.DaemonLabels), whether the target-down alert does,
// and each alert's burn check, appended to run.Checks.
func (run *Run) noteEvaluation(rep *pipeline.Report) (fired map[Key]bool, isDown bool) {
	fired = map[Key]bool{}
	for _, a := range rep.Firing() {
		switch a.Name() {
		case pipeline.AlertBurnRate:
			k := keyOf(a.Labels)
			fired[k] = true
			if run.DaemonLabels[k] == nil {
				run.DaemonLabels[k] = map[string]bool{}
			}
			run.DaemonLabels[k][labelText(a.Labels)] = true
		case pipeline.AlertTargetDown:
			isDown = true
		}
	}
	checks := map[Key]pipeline.BurnCheck{}
	for _, t := range rep.Targets {
		for _, m := range t.Models {
			for _, c := range m.Burns {
				checks[Key{c.Alert.Severity, c.Alert.Long, c.Alert.Short}] = c
			}
		}
	}
	for _, k := range run.Keys {
		run.Checks[k] = append(run.Checks[k], checks[k])
	}
	return fired, isDown
}

// keyOf reads an alert's key from its labels.
func keyOf(labels map[string]string) Key {
	long, _ := model.ParseDuration(labels["long_window"])
	short, _ := model.ParseDuration(labels["short_window"])
	return Key{labels["severity"], time.Duration(long), time.Duration(short)}
}

// trueCondition is, at each evaluation (real times), whether the true burn
// rate over both of an alert's windows exceeds its factor; held for the
// alert's For (hold) it is when the alert should have fired. Each window
// is judged between the actual scrapes the evaluation reads (taken, the
// real time of every scrape, in order; scrapeEdge): the requests the
// window's two scrapes can tell apart, whatever the scrapes' jitter.
func trueCondition(l *trueLedger, a pipeline.BurnAlert, evals, taken []time.Time) []bool {
	var cond []bool
	for _, now := range evals {
		end := scrapeEdge(taken, now)
		long, _, okL := l.burn(scrapeEdge(taken, now.Add(-a.Long)), end)
		short, _, okS := l.burn(scrapeEdge(taken, now.Add(-a.Short)), end)
		cond = append(cond, okL && okS && long > a.Factor && short > a.Factor)
	}
	return cond
}

// scrapeEdge is the last of the scrape times taken (in order) at or before
// t, where a window read at t has its edge; t itself before the first
// scrape, where no scrape bounds the window.
func scrapeEdge(taken []time.Time, t time.Time) time.Time {
	i := upperIndex(taken, t)
	if i == 0 {
		return t
	}
	return taken[i-1]
}

// hold turns a condition per evaluation into firing per evaluation: firing
// once the condition has held for at least d (Prometheus's `for`).
func hold(cond []bool, d time.Duration) []bool {
	out := make([]bool, len(cond))
	since := -1
	for i, c := range cond {
		if !c {
			since = -1
			continue
		}
		if since < 0 {
			since = i
		}
		out[i] = time.Duration(i-since)*Interval >= d
	}
	return out
}

// Policy decides from one burn check whether a burn alert's condition holds.
type Policy struct {
	Name   string
	Active func(pipeline.BurnCheck) bool
}

// Replay is the firing episodes an alert would have had under a policy.
func (r *Run) Replay(k Key, p Policy) []Episode { return r.ReplayHeld(k, p, r.For[k]) }

// ReplayHeld is Replay with the alert held for d instead of its own `for`.
func (r *Run) ReplayHeld(k Key, p Policy, d time.Duration) []Episode {
	cond := make([]bool, len(r.Checks[k]))
	for i, c := range r.Checks[k] {
		cond[i] = c.Known && p.Active(c)
	}
	return episodes(hold(cond, d))
}

// labelText writes a label set in sorted order: {a="1", b="2"}.
func labelText(ls map[string]string) string {
	return model.LabelSet(toLabelSet(ls)).String()
}

func toLabelSet(ls map[string]string) model.LabelSet {
	out := make(model.LabelSet, len(ls))
	for k, v := range ls {
		out[model.LabelName(k)] = model.LabelValue(v)
	}
	return out
}
