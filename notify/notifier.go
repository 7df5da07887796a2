// Package notify pushes the pipeline's alerts to Alertmanager's v2 API, the
// way Prometheus does: firing alerts again every resend delay, resolved
// alerts with their end time.
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

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
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
			Name: exporter.Namespace + "_exporter_notifications_sent_total",
			Help: "Alerts sent to Alertmanager, by Alertmanager.",
		}, []string{"alertmanager"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: exporter.Namespace + "_exporter_notification_errors_total",
			Help: "Failed posts to Alertmanager (after retries), by Alertmanager.",
		}, []string{"alertmanager"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: exporter.Namespace + "_exporter_notifications_dropped_total",
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

	mu       sync.Mutex // guards cfg and lastSent
	cfg      Config
	lastSent map[string]time.Time
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
		logger:   logger,
		metrics:  metrics,
		queue:    make(chan []amAlert, 1),
		cfg:      cfg,
		lastSent: map[string]time.Time{},
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

// due picks the alerts due: firing ones not sent within ResendDelay, and
// every resolved one (Prometheus keeps sending resolves while it remembers
// them). With no Alertmanager configured nothing is due and nothing is
// remembered.
func (n *Notifier) due(now time.Time, alerts []pipeline.Alert) []amAlert {
	n.mu.Lock()
	defer n.mu.Unlock()
	cfg := n.cfg
	if len(cfg.Alertmanagers) == 0 {
		clear(n.lastSent)
		return nil
	}
	validFor := 4 * max(cfg.ResendDelay, cfg.EvaluationInterval, time.Minute)
	// Only the firing alerts of this evaluation are remembered, so the map
	// never grows, and an alert that fires again after resolving (a new
	// ActiveAt) is a new instance, sent at once.
	sent := make(map[string]time.Time, len(n.lastSent))
	defer func() { n.lastSent = sent }()
	var out []amAlert
	for _, a := range alerts {
		if a.State == pipeline.StatePending {
			continue
		}
		if a.State == pipeline.StateFiring {
			key := a.Fingerprint() + "@" + a.ActiveAt.Format(time.RFC3339Nano)
			if last, ok := n.lastSent[key]; ok && now.Sub(last) < cfg.ResendDelay {
				sent[key] = last
				continue
			}
			sent[key] = now
		}
		labels := maps.Clone(a.Labels)
		for k, v := range cfg.ExternalLabels {
			if _, ok := labels[k]; !ok {
				labels[k] = v
			}
		}
		al := amAlert{Labels: labels, Annotations: a.Annotations, StartsAt: a.ActiveAt, GeneratorURL: generatorURL(cfg.GeneratorURL, a)}
		if a.State == pipeline.StateResolved {
			al.EndsAt = a.ResolvedAt
		} else {
			al.EndsAt = now.Add(validFor)
		}
		out = append(out, al)
	}
	return out
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

func (am Alertmanager) name() string {
	if am.Display != "" {
		return am.Display
	}
	return am.URL
}

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
		return fmt.Errorf("POST %s: %w", shown, err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := am.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", shown, err) // net/http hides the password itself
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: status %s", shown, resp.Status)
	}
	return nil
}
