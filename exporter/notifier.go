package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
)

// AlertmanagerTarget is one Alertmanager the notifier posts to.
type AlertmanagerTarget struct {
	// URL is the base URL; alerts go to URL + "/api/v2/alerts".
	URL string
	// Display names the Alertmanager in labels, logs and errors: the URL
	// with any password hidden.
	Display string
	Client  *http.Client
	Timeout time.Duration
}

// NotifierOptions configures a Notifier.
type NotifierOptions struct {
	Alertmanagers []AlertmanagerTarget
	// ResendDelay is the least time between two sends of a still-firing alert.
	ResendDelay time.Duration
	// EvaluationInterval sets how long a sent firing alert stays valid in
	// Alertmanager without news (4 × max(ResendDelay, EvaluationInterval), as
	// Prometheus does).
	EvaluationInterval time.Duration
	// ExternalLabels are added to every alert, never overriding its own.
	ExternalLabels map[string]string
	// GeneratorURL is the link back to us in every alert.
	GeneratorURL string
	Logger       *slog.Logger
	// Metrics counts what was sent; it outlives notifiers replaced by reloads.
	Metrics *NotifierMetrics
}

// NotifierMetrics counts notifications; build it once per registry.
type NotifierMetrics struct {
	sent, errors *prometheus.CounterVec
	dropped      prometheus.Counter
}

// NewNotifierMetrics registers the notifier's counters.
func NewNotifierMetrics(reg prometheus.Registerer) *NotifierMetrics {
	m := &NotifierMetrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: Namespace + "_exporter_notifications_sent_total",
			Help: "Alerts sent to Alertmanager, by Alertmanager.",
		}, []string{"alertmanager"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: Namespace + "_exporter_notification_errors_total",
			Help: "Failed posts to Alertmanager (after retries), by Alertmanager.",
		}, []string{"alertmanager"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: Namespace + "_exporter_notifications_dropped_total",
			Help: "Alert batches replaced by a newer one before they could be sent.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.sent, m.errors, m.dropped)
	}
	return m
}

// Notifier pushes alerts to Alertmanager's v2 API the way Prometheus does:
// firing alerts again every ResendDelay, resolved alerts with their end time.
// Sending happens in its own goroutine with a queue of one batch (the newest
// wins), so a down or slow Alertmanager never blocks the evaluation or the
// scrapes.
type Notifier struct {
	opts     NotifierOptions
	queue    chan []amAlert
	mu       sync.Mutex
	lastSent map[string]time.Time
	metrics  *NotifierMetrics
}

// amAlert is an alert in Alertmanager's v2 API (postableAlert).
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// NewNotifier returns a notifier; Run must be started for it to send.
func NewNotifier(opts NotifierOptions) *Notifier {
	if opts.Metrics == nil {
		opts.Metrics = NewNotifierMetrics(nil)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{
		opts:     opts,
		queue:    make(chan []amAlert, 1),
		lastSent: map[string]time.Time{},
		metrics:  opts.Metrics,
	}
	return n
}

// Notify queues what should be sent for the alerts of one evaluation at now.
// It never blocks.
func (n *Notifier) Notify(now time.Time, alerts []pipeline.Alert) {
	batch := n.due(now, alerts)
	if len(batch) == 0 || len(n.opts.Alertmanagers) == 0 {
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
// every resolved one (Prometheus keeps sending resolves while it remembers them).
func (n *Notifier) due(now time.Time, alerts []pipeline.Alert) []amAlert {
	n.mu.Lock()
	defer n.mu.Unlock()
	validFor := 4 * max(n.opts.ResendDelay, n.opts.EvaluationInterval, time.Minute)
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
			if last, ok := n.lastSent[key]; ok && now.Sub(last) < n.opts.ResendDelay {
				sent[key] = last
				continue
			}
			sent[key] = now
		}
		labels := maps.Clone(a.Labels)
		for k, v := range n.opts.ExternalLabels {
			if _, ok := labels[k]; !ok {
				labels[k] = v
			}
		}
		al := amAlert{Labels: labels, Annotations: a.Annotations, StartsAt: a.ActiveAt, GeneratorURL: n.opts.GeneratorURL}
		if a.State == pipeline.StateResolved {
			al.EndsAt = a.ResolvedAt
		} else {
			al.EndsAt = now.Add(validFor)
		}
		out = append(out, al)
	}
	return out
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

// send posts a batch to every Alertmanager concurrently, with retries.
func (n *Notifier) send(ctx context.Context, batch []amAlert) {
	body, err := json.Marshal(batch)
	if err != nil {
		n.opts.Logger.Error("encode alerts", "err", err)
		return
	}
	var wg sync.WaitGroup
	for _, am := range n.opts.Alertmanagers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.postWithRetry(ctx, am, body); err != nil {
				n.metrics.errors.WithLabelValues(am.name()).Inc()
				n.opts.Logger.Warn("alerts not delivered", "alertmanager", am.name(), "alerts", len(batch), "err", err)
				return
			}
			n.metrics.sent.WithLabelValues(am.name()).Add(float64(len(batch)))
		}()
	}
	wg.Wait()
}

// postWithRetry tries three times with a doubling backoff from one second.
func (n *Notifier) postWithRetry(ctx context.Context, am AlertmanagerTarget, body []byte) error {
	backoff := time.Second
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = post(ctx, am, body); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff *= 2
	}
	return err
}

func (am AlertmanagerTarget) name() string {
	if am.Display != "" {
		return am.Display
	}
	return am.URL
}

func post(ctx context.Context, am AlertmanagerTarget, body []byte) error {
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
