// Package notify pushes the pipeline's alerts to Alertmanager's v2 API, the
// way Prometheus does: firing alerts again every resend delay, resolved
// alerts with their end time. The report's alerts that share their labels
// (a burn-rate alert of one model's SLO on several targets) are one
// Alertmanager alert, sent firing while any of them fires and resolved only
// when none does, so that one target's resolve never closes another's page.
//
// It never evaluates anything: it only sends the alerts a pipeline Report
// holds. Sending runs in its own goroutine, so a down or slow Alertmanager
// never blocks the evaluation or the scrapes. One Notifier lives as long as
// the daemon; a reload changes its configuration in place (ApplyConfig), so
// what was sent, and when, survives reloads.
package notify

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/alerting"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// Alertmanager is one Alertmanager the notifier posts to.
type Alertmanager struct {
	// URL is the base URL; alerts go to URL + "/api/v2/alerts".
	URL string
	// Display names the Alertmanager in labels, logs and errors: the URL
	// with any password hidden.
	Display string
	// Client sends the posts; http.DefaultClient when nil.
	Client *http.Client
	// Timeout bounds one post; 10 s when not positive.
	Timeout time.Duration
}

// Config is what a reload may change in a Notifier.
type Config struct {
	// Alertmanagers receive the alerts; none means nothing is sent.
	Alertmanagers []Alertmanager
	// ResendDelay is the least time between two sends of a still-firing alert.
	ResendDelay time.Duration
	// EvaluationInterval sets how long a sent firing alert stays valid in
	// Alertmanager without news (4 × max(ResendDelay, EvaluationInterval,
	// 1 m), as Prometheus does).
	EvaluationInterval time.Duration
	// ExternalLabels are added to every alert, never overriding its own.
	ExternalLabels map[string]string
	// GeneratorURL is the console's external address: every alert links
	// back to it, a burn-rate alert to its SLO's page (see generatorURL).
	GeneratorURL string
	// PerTarget adds the target label to burn-rate alerts: one Alertmanager
	// alert per target instead of one per breach of the model's SLO (which
	// then no longer merges with the generated rule's alert).
	PerTarget bool
}

// Metrics counts notifications; build it once per registry.
type Metrics struct {
	sent, errors *prometheus.CounterVec
	dropped      prometheus.Counter
}

// NewMetrics registers the notifier's counters with reg (none when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_slo_exporter_notifications_sent_total",
			Help: "Alerts sent to Alertmanager, by Alertmanager.",
		}, []string{"alertmanager"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_slo_exporter_notification_errors_total",
			Help: "Failed posts to Alertmanager (after retries), by Alertmanager.",
		}, []string{"alertmanager"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vllm_slo_exporter_notifications_dropped_total",
			Help: "Alert batches replaced by a newer one before they could be sent.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.sent, m.errors, m.dropped)
	}
	return m
}

// Notifier queues the alerts due at each evaluation and sends them from Run,
// with a queue of one batch (the newest wins).
type Notifier struct {
	logger  *slog.Logger
	metrics *Metrics
	queue   chan []amAlert

	mu   sync.Mutex // guards cfg and sent
	cfg  Config
	sent map[string]*sendState // by breach (labelKey)
}

// amAlert is an alert in Alertmanager's v2 API (postableAlert).
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// New returns a notifier; Run must be started for it to send. A nil logger
// discards; nil metrics are counted nowhere.
func New(cfg Config, logger *slog.Logger, metrics *Metrics) *Notifier {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Notifier{
		logger:  logger,
		metrics: metrics,
		queue:   make(chan []amAlert, 1),
		cfg:     cfg,
		sent:    map[string]*sendState{},
	}
}

// ApplyConfig replaces the configuration. What was sent, and when, is kept:
// a still-firing alert is sent again only when its resend delay has passed,
// whatever the reload changed. The idle connections of Alertmanager clients
// that the new configuration no longer uses are closed.
func (n *Notifier) ApplyConfig(cfg Config) {
	n.mu.Lock()
	old := n.cfg.Alertmanagers
	n.cfg = cfg
	n.mu.Unlock()
	for _, am := range old {
		if am.Client != nil && !slices.ContainsFunc(cfg.Alertmanagers, func(a Alertmanager) bool { return a.Client == am.Client }) {
			am.Client.CloseIdleConnections()
		}
	}
}

// Config returns the configuration in force.
func (n *Notifier) Config() Config {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cfg
}

// Close closes the idle connections of every Alertmanager client, once Run
// has returned.
func (n *Notifier) Close() {
	for _, am := range n.Config().Alertmanagers {
		if am.Client != nil {
			am.Client.CloseIdleConnections()
		}
	}
}

// Notify queues what should be sent for the alerts of one evaluation at now.
// It never blocks.
func (n *Notifier) Notify(now time.Time, alerts []pipeline.Alert) {
	batch := n.due(now, alerts)
	if len(batch) == 0 {
		return
	}
	select {
	case n.queue <- batch:
		return
	default:
	}
	// Replace the stale batch with the newer one.
	select {
	case <-n.queue:
		n.metrics.dropped.Inc()
	default:
	}
	select {
	case n.queue <- batch:
	default:
		n.metrics.dropped.Inc()
	}
}

// due picks what to send at now: one alert per identity (see breach), firing
// when any of its sources fires, sent at once when it starts firing and
// again every ResendDelay; resolved only when none of them fires any more,
// sent at once when it stops firing and again every ResendDelay, against a
// lost post, until the last firing post's end time has passed (Alertmanager
// has let that alert expire by then, so a later resolve would only close
// what another sender, sharing the labels, still fires). A resolve is never
// sent twice within ResendDelay, even across a flapping source or a reload
// storm that retires and revives a target: the resolve that is not due yet
// goes out once the delay has passed. With no Alertmanager configured
// nothing is due and nothing is remembered.
func (n *Notifier) due(now time.Time, alerts []pipeline.Alert) []amAlert {
	n.mu.Lock()
	defer n.mu.Unlock()
	cfg := n.cfg
	if len(cfg.Alertmanagers) == 0 {
		clear(n.sent)
		return nil
	}
	validFor := 4 * max(cfg.ResendDelay, cfg.EvaluationInterval, time.Minute)
	breaches := gather(alerts, cfg)
	var out []amAlert
	for _, key := range slices.Sorted(maps.Keys(breaches)) {
		st := n.sent[key]
		if st == nil {
			st = &sendState{}
			n.sent[key] = st
		}
		if al, send := st.next(now, breaches[key], cfg.ResendDelay, validFor); send {
			out = append(out, al)
		}
	}
	return append(out, n.forgetGone(now, cfg.ResendDelay)...)
}

// next is what a breach in the report owes at now, if anything (see due).
func (st *sendState) next(now time.Time, b *breach, resendDelay, validFor time.Duration) (amAlert, bool) {
	st.seen = now
	al := amAlert{Labels: b.labels, Annotations: b.annotations, GeneratorURL: b.generator}
	st.last = al
	if b.firing {
		if st.since.IsZero() {
			st.since = b.startsAt
		}
		if st.firingSent && now.Sub(st.lastFiring) < resendDelay {
			return amAlert{}, false
		}
		st.firingSent, st.lastFiring, st.resolvePending = true, now, false
		al.StartsAt, al.EndsAt = st.since, now.Add(validFor)
		return al, true
	}
	if st.firingSent {
		// The breach stopped firing since the last evaluation.
		st.firingSent, st.resolvePending = false, true
	}
	st.resolvedAt = b.resolvedAt
	if !st.resolvePending && st.resolveSent && now.Sub(st.lastResolve) >= resendDelay && now.Before(st.lastFiring.Add(validFor)) {
		st.resolvePending = true // re-sent while the last firing post may still hold the alert open
	}
	if !st.resolveSent && !st.resolvePending {
		st.resolvePending = true // never sent before (a restart, a new Alertmanager)
	}
	if !st.resolvePending || (st.resolveSent && now.Sub(st.lastResolve) < resendDelay) {
		return amAlert{}, false
	}
	if st.since.IsZero() {
		st.since = b.startsAt
	}
	return st.resolve(now), true
}

// forgetGone handles the breaches no source of which is in the report any
// more: their resolve aged out, or their sources are pending again or gone.
// A resolve still owed (held back by ResendDelay, or never made because the
// sources left firing) goes out when due; then the breach is forgotten, so
// the map never outgrows the report. n.mu must be held.
func (n *Notifier) forgetGone(now time.Time, resendDelay time.Duration) []amAlert {
	var out []amAlert
	for _, key := range slices.Sorted(maps.Keys(n.sent)) {
		st := n.sent[key]
		if st.seen.Equal(now) {
			continue
		}
		if st.firingSent {
			st.firingSent, st.resolvePending, st.resolvedAt = false, true, now
		}
		if st.resolvePending {
			if st.resolveSent && now.Sub(st.lastResolve) < resendDelay {
				continue
			}
			out = append(out, st.resolve(now))
		}
		delete(n.sent, key)
	}
	return out
}

// resolve is the breach's resolve, sent at now: the last post's labels and
// annotations, from the episode's start to when it stopped firing.
func (st *sendState) resolve(now time.Time) amAlert {
	al := st.last
	al.StartsAt, al.EndsAt = st.since, st.resolvedAt
	st.resolveSent, st.lastResolve, st.resolvePending, st.since = true, now, false, time.Time{}
	return al
}

// sendState is what was sent for one breach.
type sendState struct {
	// since is when the breach's current firing episode started (sent as
	// startsAt); zero while it does not fire.
	since time.Time
	// firingSent is true while the breach fires and was sent firing, at
	// lastFiring.
	firingSent bool
	lastFiring time.Time
	// resolveSent is true once a resolve was sent, at lastResolve;
	// resolvePending when a resolve is due but the last one is less than
	// ResendDelay old.
	resolveSent, resolvePending bool
	lastResolve                 time.Time
	// seen is the last evaluation that held a source of the breach.
	seen time.Time
	// last is the breach as last seen (labels, annotations), and resolvedAt
	// when it stopped firing: what a resolve sends.
	last       amAlert
	resolvedAt time.Time
}

// breach is one alert as Alertmanager holds it: the alerts of the report
// that share its own labels as sent (ownLabels) are its sources.
//
// Why sources merge: the burn-rate alert of one SLO and model carries no
// target (so that the daemon's and the generated rule's alert for one breach
// are one alert in Alertmanager), so every target serving the model is a
// source of the same alert, and Alertmanager keeps the most recently
// updated of the posts it gets for one label set: a resolve for one target
// closes the alert while another still fires it, until that one's next
// resend. Sent as one breach, firing while any source fires and resolved
// only when none does, no target of this daemon can close another's page.
type breach struct {
	labels, annotations map[string]string
	// generator is the link back to the console (see generatorURL), from
	// the same source as the annotations.
	generator string
	firing    bool
	// startsAt is the earliest ActiveAt of the firing sources (of every
	// source when none fires); resolvedAt the latest ResolvedAt.
	startsAt, resolvedAt time.Time
}

// gather groups the report's firing and resolved alerts into breaches by
// their own labels as sent. The annotations are the earliest firing source's
// (the earliest source's when none fires), with "targets" listing the
// targets the breach fires on (or fired on, once resolved).
func gather(alerts []pipeline.Alert, cfg Config) map[string]*breach {
	out := map[string]*breach{}
	targets := map[string][]string{}
	first := map[string]pipeline.Alert{}
	for _, a := range alerts {
		if a.State == pipeline.StatePending {
			continue
		}
		own := ownLabels(a, cfg)
		key := alerting.LabelsKey(own)
		labels := withExternal(own, cfg)
		b, ok := out[key]
		if !ok {
			b = &breach{labels: labels}
			out[key] = b
		}
		firing := a.State == pipeline.StateFiring
		switch {
		case firing && !b.firing:
			b.firing, b.startsAt, first[key] = true, a.ActiveAt, a
			targets[key] = nil
		case firing == b.firing && (!ok || a.ActiveAt.Before(b.startsAt)):
			b.startsAt, first[key] = a.ActiveAt, a
		}
		if !firing && a.ResolvedAt.After(b.resolvedAt) {
			b.resolvedAt = a.ResolvedAt
		}
		if firing == b.firing && a.Target != "" && !slices.Contains(targets[key], a.Target) {
			targets[key] = append(targets[key], a.Target)
		}
	}
	for key, b := range out {
		b.annotations = maps.Clone(first[key].Annotations)
		b.generator = generatorURL(cfg.GeneratorURL, first[key])
		if ts := targets[key]; len(ts) > 0 && first[key].Name() == pipeline.AlertBurnRate {
			if b.annotations == nil {
				b.annotations = map[string]string{}
			}
			slices.Sort(ts)
			b.annotations["targets"] = strings.Join(ts, ", ")
		}
	}
	return out
}

// ownLabels are an alert's own labels as sent: with PerTarget a burn-rate
// alert carries its target. They identify the breach: the external labels,
// the same on every alert and changed by a reload, do not (so a reload that
// changes them does not make a still-firing alert new).
func ownLabels(a pipeline.Alert, cfg Config) map[string]string {
	labels := maps.Clone(a.Labels)
	if cfg.PerTarget && a.Name() == pipeline.AlertBurnRate && a.Target != "" {
		labels["target"] = a.Target
	}
	return labels
}

// withExternal adds the external labels without overriding the alert's own.
func withExternal(own map[string]string, cfg Config) map[string]string {
	labels := maps.Clone(own)
	for k, v := range cfg.ExternalLabels {
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
	return labels
}

// generatorURL is an alert's link back to the console at base: the page of
// its SLO of its model on the target it came from when it names them (a
// burn-rate alert), else the overview. Empty without a base.
func generatorURL(base string, a pipeline.Alert) string {
	if base == "" {
		return ""
	}
	base = strings.TrimSuffix(base, "/")
	model, sloName := a.Labels["model_name"], a.Labels["slo"]
	target := cmp.Or(a.Target, a.Labels["target"])
	if model == "" || sloName == "" || target == "" {
		return base + "/"
	}
	return base + "/slo?" + url.Values{"target": {target}, "model": {model}, "slo": {sloName}}.Encode()
}

// Run sends queued batches until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case batch := <-n.queue:
			n.send(ctx, batch)
		}
	}
}

// send posts a batch to every Alertmanager of the current configuration
// concurrently, with retries.
func (n *Notifier) send(ctx context.Context, batch []amAlert) {
	body, err := json.Marshal(batch)
	if err != nil {
		n.logger.Error("encode alerts", "err", err)
		return
	}
	var wg sync.WaitGroup
	for _, am := range n.Config().Alertmanagers {
		wg.Go(func() {
			if err := postWithRetry(ctx, am, body); err != nil {
				n.metrics.errors.WithLabelValues(am.name()).Inc()
				n.logger.Warn("alerts not delivered", "alertmanager", am.name(), "alerts", len(batch), "err", err)
				return
			}
			n.metrics.sent.WithLabelValues(am.name()).Add(float64(len(batch)))
		})
	}
	wg.Wait()
}

// postWithRetry tries three times with a doubling backoff from one second.
func postWithRetry(ctx context.Context, am Alertmanager, body []byte) error {
	backoff := time.Second
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = post(ctx, am, body); err == nil {
			return nil
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		backoff *= 2
	}
	return err
}

// name is the Alertmanager as labels, logs and errors show it: Display,
// or the URL with its password and query values hidden.
func (am Alertmanager) name() string {
	if am.Display != "" {
		return am.Display
	}
	return scrape.RedactText(am.URL)
}

// post sends one batch. Its errors show every URL they quote redacted
// (redactedError): net/http's repeats the request URL with its query, and
// an OAuth2 or proxied client's names the token or proxy URL, which the
// Alertmanager's Display cannot hide.
func post(ctx context.Context, am Alertmanager, body []byte) error {
	timeout := am.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := strings.TrimSuffix(am.URL, "/") + "/api/v2/alerts"
	shown := strings.TrimSuffix(am.name(), "/") + "/api/v2/alerts"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return redactedError{fmt.Errorf("POST %s: %w", shown, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	client := am.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return redactedError{fmt.Errorf("POST %s: %w", shown, err)}
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: status %s", shown, resp.Status)
	}
	return nil
}

// redactedError is an error whose text has every URL in it redacted
// (scrape.RedactText), and which still unwraps to the cause.
type redactedError struct{ err error }

func (e redactedError) Error() string { return scrape.RedactText(e.err.Error()) }

func (e redactedError) Unwrap() error { return e.err }
