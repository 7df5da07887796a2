package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// daemon wires the scrape loops, the pipeline, the evaluation ticker and the
// HTTP endpoint together, and applies reloads.
type daemon struct {
	logger     *slog.Logger
	configFile string
	now        func() time.Time

	mu      sync.Mutex // guards cfg, loops, errs, warnings, closing and the notifier
	cfg     *config.Config
	closing bool       // shutting down: no more reloads
	evalMu  sync.Mutex // one evaluation at a time, so reports are stored in time order
	loops   map[string]*runningLoop
	errs    map[string]string  // last logged error per target, to log changes only
	warned  map[string]bool    // warnings already logged
	dropped map[string]float64 // models dropped when last logged, per target
	pipe    *pipeline.Pipeline
	report  atomic.Pointer[pipeline.Report]
	ctx     context.Context
	wg      sync.WaitGroup

	notifier        *exporter.Notifier // guarded by mu
	stopNotifier    context.CancelFunc
	notifierMetrics *exporter.NotifierMetrics
	generatorURL    string

	self          *prometheus.Registry
	reloadOK      prometheus.Gauge
	reloadSuccess prometheus.Gauge
	stateSaved    prometheus.Gauge
	stateErrors   prometheus.Counter
}

type runningLoop struct {
	key    string // global settings that must stay equal for the loop to keep running
	target config.Target
	cancel context.CancelFunc
	tried  atomic.Bool
}

func newDaemon(logger *slog.Logger, configFile string, cfg *config.Config) *daemon {
	d := &daemon{
		logger:     logger,
		configFile: configFile,
		now:        time.Now,
		cfg:        cfg,
		loops:      map[string]*runningLoop{},
		errs:       map[string]string{},
		warned:     map[string]bool{},
		dropped:    map[string]float64{},
		pipe:       pipeline.New(specFromConfig(cfg)),
		self:       exporter.NewSelfRegistry(),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: exporter.Namespace + "_exporter_config_last_reload_successful",
			Help: "1 if the last configuration reload succeeded.",
		}),
		reloadSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: exporter.Namespace + "_exporter_config_last_reload_success_timestamp_seconds",
			Help: "Time of the last successful configuration reload.",
		}),
	}
	d.stateSaved = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: exporter.Namespace + "_exporter_state_last_save_timestamp_seconds",
		Help: "Time the state file was last written.",
	})
	d.stateErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: exporter.Namespace + "_exporter_state_save_failures_total",
		Help: "Failed writes of the state file.",
	})
	d.self.MustRegister(d.reloadOK, d.reloadSuccess, d.stateSaved, d.stateErrors)
	d.notifierMetrics = exporter.NewNotifierMetrics(d.self)
	d.reloadOK.Set(1)
	d.reloadSuccess.SetToCurrentTime()
	return d
}

// runDaemon is the `run` command.
func runDaemon(logger *slog.Logger, configFile string, webFlags *web.FlagConfig) int {
	cfg, err := config.Load(configFile)
	if err != nil {
		return fail(logger, "load configuration", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := newDaemon(logger, configFile, cfg)
	return d.serve(ctx, func(srv *http.Server) error { return web.ListenAndServe(srv, webFlags, logger) })
}

// serve runs until ctx ends, serving HTTP with listenAndServe (exporter-
// toolkit's, which adds TLS and basic auth from --web.config.file).
func (d *daemon) serve(ctx context.Context, listenAndServe func(*http.Server) error) int {
	loopsCtx, stopLoops := context.WithCancel(context.Background())
	d.ctx = loopsCtx
	d.loadState()
	d.mu.Lock()
	d.startLoops()
	d.mu.Unlock()

	d.mu.Lock()
	if err := d.startNotifier(); err != nil {
		d.mu.Unlock()
		stopLoops()
		d.wg.Wait()
		return fail(d.logger, "alertmanagers", err)
	}
	d.mu.Unlock()
	d.wg.Add(2)
	go d.evaluateEvery(loopsCtx)
	go d.saveStateEvery(loopsCtx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-loopsCtx.Done():
				return
			case <-hup:
				if err := d.reload(); err != nil {
					d.logger.Error("reload failed, keeping the old configuration", "err", err)
				}
			}
		}
	}()

	srv := &http.Server{Handler: d.handler(), ReadHeaderTimeout: 10 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- listenAndServe(srv) }()
	code := 0
	select {
	case <-ctx.Done():
		d.logger.Info("shutting down")
	case err := <-srvErr:
		if !errors.Is(err, http.ErrServerClosed) {
			d.logger.Error("HTTP server failed", "err", err)
			code = 1
		}
	}
	d.mu.Lock()
	d.closing = true // from here on a reload is refused
	d.mu.Unlock()
	stopLoops()
	d.wg.Wait()
	d.saveState()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		d.logger.Error("HTTP shutdown", "err", err)
	}
	return code
}

func (d *daemon) handler() http.Handler {
	return exporter.NewHandler(exporter.Endpoints{
		Report: d.report.Load,
		Ready:  d.ready,
		Reload: func(context.Context) error { return d.reload() },
		ConfigYAML: func() ([]byte, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.cfg.Redacted()
		},
		Self:           d.self,
		History:        d.pipe,
		RefreshSeconds: int(time.Duration(d.cfg.Global.ScrapeInterval).Seconds()),
	})
}

// ready is true once every configured target has been tried.
func (d *daemon) ready() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.loops {
		if !l.tried.Load() {
			return false
		}
	}
	return true
}

// startLoops starts a scrape loop for every target that has none running
// with the same settings, and stops loops of targets that are gone or changed.
// d.mu must be held.
func (d *daemon) startLoops() {
	want := map[string]config.Target{}
	for _, t := range d.cfg.Targets {
		want[t.Name] = t
	}
	for name, l := range d.loops {
		t, ok := want[name]
		if !ok || l.key != loopKey(t, d.cfg) || !l.target.Equal(t) {
			l.cancel()
			delete(d.loops, name)
			delete(d.errs, name)
		}
	}
	for _, t := range d.cfg.Targets {
		if _, ok := d.loops[t.Name]; ok {
			continue
		}
		if err := d.startLoop(t); err != nil {
			d.logger.Error("target not started", "target", t.Name, "err", err)
		}
	}
}

// loopKey is what must stay equal for a running loop to be kept on reload;
// the target's own settings are compared with config.Target.Equal.
func loopKey(t config.Target, cfg *config.Config) string {
	return fmt.Sprintf("%v|%v|%d", t.Interval(cfg.Global), t.Timeout(cfg.Global), int64(cfg.Global.BodySizeLimit))
}

func (d *daemon) startLoop(t config.Target) error {
	profile, err := scrape.LookupProfile(t.Profile)
	if err != nil {
		return err
	}
	g := d.cfg.Global
	f, err := scrape.NewFetcher(t.Name, t.URL, t.HTTPClientConfig, t.Timeout(g), int64(g.BodySizeLimit))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(d.ctx)
	rl := &runningLoop{key: loopKey(t, d.cfg), target: t, cancel: cancel}
	d.loops[t.Name] = rl
	loop := &scrape.Loop{Target: t.Name, Fetcher: f, Profile: profile, Interval: t.Interval(g), Timeout: t.Timeout(g), Now: d.now}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		loop.Run(ctx, func(r scrape.Result) {
			if ctx.Err() != nil {
				return // stopped mid-scrape: the result is not a failure of the target
			}
			d.ingest(r)
			if !rl.tried.Swap(true) && d.ready() {
				// Ready means serving: publish the first scrapes now rather
				// than at the next evaluation tick.
				d.evaluate()
			}
		})
	}()
	return nil
}

// ingest hands a scrape result to the pipeline and logs a target's error only
// when it changes, so a target that stays down does not flood the log.
func (d *daemon) ingest(r scrape.Result) {
	var err error
	if r.Err != nil {
		err = r.Err
		d.pipe.RecordFailure(r.Target, scrape.FailureReason(r.Err), r.Err, r.Time, r.Duration)
	} else {
		err = d.pipe.Ingest(r.Target, r.Snapshot, r.Duration)
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	d.mu.Lock()
	prev := d.errs[r.Target]
	d.errs[r.Target] = msg
	d.mu.Unlock()
	switch {
	case msg != "" && msg != prev:
		d.logger.Warn("scrape failed", "target", r.Target, "reason", scrape.FailureReason(err), "err", err)
	case msg == "" && prev != "":
		d.logger.Info("scrape recovered", "target", r.Target)
	}
}

// evaluateEvery publishes a new report at every evaluation interval.
func (d *daemon) evaluateEvery(ctx context.Context) {
	defer d.wg.Done()
	d.mu.Lock()
	interval := time.Duration(d.cfg.Global.EvaluationInterval)
	d.mu.Unlock()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		d.evaluate()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (d *daemon) evaluate() {
	d.evalMu.Lock()
	defer d.evalMu.Unlock()
	rep := d.pipe.Evaluate(d.now())
	d.report.Store(rep)
	d.warnOnce(rep)
	d.mu.Lock()
	n := d.notifier
	d.mu.Unlock()
	if n != nil {
		n.Notify(rep.Time, rep.Alerts)
	}
}

// reload reads the configuration file again and applies it only when it is
// valid; otherwise the running configuration stays.
func (d *daemon) reload() error {
	cfg, err := config.Load(d.configFile)
	if err != nil {
		d.reloadOK.Set(0)
		return err
	}
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		return errors.New("shutting down")
	}
	old := d.cfg
	d.cfg = cfg
	if err := d.startNotifier(); err != nil {
		d.cfg = old
		d.mu.Unlock()
		d.reloadOK.Set(0)
		return err
	}
	d.pipe.Reconfigure(specFromConfig(cfg))
	d.startLoops()
	d.mu.Unlock()
	d.reloadOK.Set(1)
	d.reloadSuccess.SetToCurrentTime()
	d.logger.Info("configuration reloaded", "file", d.configFile)
	d.evaluate()
	return nil
}

// startNotifier replaces the Alertmanager notifier with one for the current
// configuration. d.mu must be held.
func (d *daemon) startNotifier() error {
	a := d.cfg.Alerting
	var targets []exporter.AlertmanagerTarget
	for i, am := range a.Alertmanagers {
		client, err := commoncfg.NewClientFromConfig(am.HTTPClientConfig, fmt.Sprintf("alertmanager-%d", i))
		if err != nil {
			return fmt.Errorf("alertmanager %s: %w", config.RedactURL(am.URL), err)
		}
		targets = append(targets, exporter.AlertmanagerTarget{URL: am.URL, Display: config.RedactURL(am.URL), Client: client, Timeout: time.Duration(am.Timeout)})
	}
	if d.stopNotifier != nil {
		d.stopNotifier()
		d.stopNotifier = nil
	}
	d.notifier = nil
	if len(targets) == 0 {
		return nil
	}
	n := exporter.NewNotifier(exporter.NotifierOptions{
		Alertmanagers:      targets,
		ResendDelay:        time.Duration(a.ResendDelay),
		EvaluationInterval: time.Duration(d.cfg.Global.EvaluationInterval),
		ExternalLabels:     a.ExternalLabels,
		GeneratorURL:       d.generatorURL,
		Logger:             d.logger,
		Metrics:            d.notifierMetrics,
	})
	ctx, cancel := context.WithCancel(d.ctx)
	d.notifier, d.stopNotifier = n, cancel
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		n.Run(ctx)
	}()
	return nil
}

// warnOnce logs each target warning (such as a threshold off the bucket
// edges) the first time it appears.
func (d *daemon) warnOnce(rep *pipeline.Report) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range rep.Targets {
		// Model names refused by the cap: logged when the first is refused
		// and again whenever the count doubles, never at every scrape.
		if n := t.ModelsDropped; n > 0 && n >= 2*d.dropped[t.Name] {
			d.dropped[t.Name] = n
			d.logger.Warn("target serves more model_name values than max_models_per_target; new ones are dropped, existing ones kept",
				"target", t.Name, "dropped_total", n)
		}
		for _, w := range t.Warnings {
			if key := t.Name + "\x00" + w; !d.warned[key] {
				d.warned[key] = true
				d.logger.Warn(w, "target", t.Name)
			}
		}
	}
}
