// Package daemon runs the exporter as a long-lived process. Run starts one
// group of actors and joins them all on shutdown:
//
//   - signals: SIGHUP reloads the configuration, SIGTERM and SIGINT stop;
//   - scrape loops: a supervisor owns one scrape loop per target and, on
//     reload, stops and starts exactly the loops whose target changed;
//   - evaluator: publishes a new pipeline report every evaluation interval;
//   - notifier: pushes the report's alerts to Alertmanager;
//   - web: serves /metrics, the pages and the operational endpoints;
//   - state saver: writes the history to the state file now and then (and
//     once more after every other actor has stopped);
//   - exact mode, when the otlp section is on: the OTLP trace receiver
//     (and its forwarder) feeding the per-request store the pipeline reads.
//
// The first actor to return stops the others. Each concern has its own lock
// or its own goroutine: the running configuration (safeConfig), the reload
// sequence, the evaluation, the loops (owned by their supervisor).
//
// The package holds no math and renders nothing: package pipeline computes,
// package exporter serves what it computed, package notify pushes alerts. The
// cmd package only parses flags and calls New and Run.
package daemon

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

	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/capacity/online"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/console"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/notify"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// shutdownTimeout bounds how long the web server waits for requests in
// flight when the daemon stops.
const shutdownTimeout = 10 * time.Second

// Options are what the command line decides.
type Options struct {
	// ConfigFile is the configuration file, read by New and by every reload.
	ConfigFile string
	// Logger receives every log line; nil discards.
	Logger *slog.Logger
	// Serve serves HTTP with srv until srv is shut down (the run command
	// passes exporter-toolkit's web.ListenAndServe, which adds TLS and basic
	// auth from --web.config.file). Required.
	Serve func(srv *http.Server) error
	// ServeProbes, when set, serves /-/healthy and /-/ready alone with srv,
	// apart from Serve's TLS and authentication, until srv is shut down (the
	// run command's --web.probe-listen-address).
	ServeProbes func(srv *http.Server) error
	// EnableLifecycle turns on POST /-/reload; off, it answers 403 and
	// SIGHUP remains the way to reload (--web.enable-lifecycle).
	EnableLifecycle bool
	// Signals, when set, replaces the process's SIGHUP, SIGTERM and SIGINT
	// (tests send them on a channel).
	Signals <-chan os.Signal
	// Dial, when set, replaces the network dialer of every outgoing
	// connection, to targets and to Alertmanagers (tests dial in memory).
	Dial commoncfg.DialContextFunc
	// ExternalURL is the address people reach the console by
	// (--web.external-url); each alert sent to Alertmanager links from it to
	// its SLO's page (generatorURL). Empty: alerts carry no link.
	ExternalURL string
}

// Daemon is the running exporter: build it with New, start it with Run.
type Daemon struct {
	logger *slog.Logger
	opts   Options

	config   *safeConfig
	pipe     *pipeline.Pipeline
	loops    *scrapeLoops
	notifier *notify.Notifier
	report   atomic.Pointer[pipeline.Report]
	self     *prometheus.Registry
	clock    *steadyClock // scrape and evaluation times; see steadyClock
	state    stateMetrics
	eval     evaluationMetrics
	saveMu   sync.Mutex // one save at a time; guards unusableState and saveErrKey
	// unusableState is the state file start-up found unusable, which the
	// next save must move aside before writing (see saveState); "" when none.
	unusableState string
	saveErrKey    string // masked error of the failing saves, "" while they succeed

	reloadMu sync.Mutex // one reload at a time, from SIGHUP or HTTP

	evalMu  sync.Mutex              // one evaluation at a time, so reports are stored in time order; guards warned, dropped and logged
	warned  map[string]bool         // warnings already logged
	dropped map[string]float64      // models dropped when last logged, per target
	logged  map[string]loggedTarget // target states last logged

	// exact is the OTLP receiver and per-request store of exact mode (nil
	// when the otlp section is off); calibration logs failed bounds.
	exact       *exactMode
	calibration *calibrationLog
	// capacity learns each target's, model's and SLO's capacity from the
	// intervals the pipeline closes; the pipeline refits it at every
	// evaluation and its estimates and headroom tickets are part of the
	// report (see capacityStage).
	capacity *online.Learners
	// charts keeps the reports' evaluations for the console's charts,
	// which draw them instead of evaluating the history again.
	charts *console.Ring
}

// New loads the configuration file and builds the daemon; nothing runs
// before Run.
func New(opts Options) (*Daemon, error) {
	if opts.Serve == nil {
		return nil, errors.New("daemon: no HTTP server (Options.Serve)")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	self := exporter.NewSelfRegistry()
	sc, err := newSafeConfig(opts.ConfigFile, self)
	if err != nil {
		return nil, err
	}
	cfg := sc.get()
	nc, err := notifierConfig(cfg, opts.Dial, opts.ExternalURL)
	if err != nil {
		return nil, err
	}
	clock := newSteadyClock(time.Now, nil)
	exact, err := exactFromConfig(cfg, logger, clock)
	if err != nil {
		return nil, err
	}
	if exact != nil {
		self.MustRegister(exact.Receiver.Collector())
	}
	d := &Daemon{
		logger:      logger,
		opts:        opts,
		config:      sc,
		notifier:    notify.New(nc, logger, notify.NewMetrics(self)),
		self:        self,
		state:       newStateMetrics(self),
		eval:        newEvaluationMetrics(self),
		warned:      map[string]bool{},
		dropped:     map[string]float64{},
		logged:      map[string]loggedTarget{},
		clock:       clock,
		exact:       exact,
		calibration: newCalibrationLog(logger),
		capacity:    online.New(nil),
		charts:      console.NewRing(time.Duration(cfg.Global.EvaluationInterval), cfg.LongestPeriod()),
	}
	d.pipe = pipeline.New(d.pipelineSpec(cfg))
	d.pipe.AddAmender(d.capacityStage())
	d.loops = newScrapeLoops(logger, opts.Dial, d.ingest, d.evaluate)
	d.loops.now = d.clock.now
	return d, nil
}

// Run restores the state, runs every actor until ctx ends, a stop signal
// arrives or an actor fails, and joins them all. After a requested stop it
// saves the state once more and returns nil. After a failure (the port was
// taken, most likely by another daemon on the same state file) it returns the
// failure and leaves the state file as the periodic saves left it.
func (d *Daemon) Run(ctx context.Context) error {
	d.loadState()
	cfg := d.config.get()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := func(error) { cancel() }
	srv := exporter.NewServer(d.handler())

	// One actor a line; the first to return interrupts the others, and
	// g.Run returns once they all have.
	var g run.Group
	g.Add(func() error { return d.handleSignals(ctx) }, stop)
	g.Add(func() error { return d.loops.run(ctx, cfg) }, stop)
	g.Add(func() error { return d.evaluateEvery(ctx, time.Duration(cfg.Global.EvaluationInterval)) }, stop)
	g.Add(func() error { d.notifier.Run(ctx); return nil }, stop)
	g.Add(func() error { return d.saveStateEvery(ctx, time.Duration(cfg.Global.StateSaveInterval)) }, stop)
	g.Add(func() error { return d.serve(d.opts.Serve, srv) }, func(error) { d.shutdownHTTP(srv) })
	if d.exact != nil {
		g.Add(func() error { return d.exact.Run(ctx) }, stop)
	}
	if d.opts.ServeProbes != nil {
		probes := exporter.NewServer(exporter.NewProbeHandler(d.ready))
		g.Add(func() error { return d.serve(d.opts.ServeProbes, probes) }, func(error) { d.shutdownHTTP(probes) })
	}
	err := g.Run()

	d.notifier.Close()
	if err != nil {
		return err
	}
	d.saveState()
	return nil
}

// handleSignals reloads on SIGHUP and returns on SIGTERM, SIGINT or when
// ctx ends.
func (d *Daemon) handleSignals(ctx context.Context) error {
	signals := d.opts.Signals
	if signals == nil {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
		defer signal.Stop(c)
		signals = c
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case sig := <-signals:
			if sig != syscall.SIGHUP {
				d.logger.Info("shutting down", "signal", sig.String())
				return nil
			}
			_ = d.Reload() // Reload logs its outcome
		}
	}
}

// serve runs the HTTP server until shutdownHTTP; a server that fails (a port
// taken, a bad web configuration) is an error that stops the daemon.
func (d *Daemon) serve(serve func(*http.Server) error, srv *http.Server) error {
	if err := serve(srv); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("HTTP server: %w", err)
	}
	return nil
}

// shutdownHTTP stops the server, giving requests in flight shutdownTimeout.
func (d *Daemon) shutdownHTTP(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		d.logger.Error("HTTP shutdown", "err", err)
	}
}

// ready reports whether the daemon serves every running target: each has
// finished a scrape and the published report holds it, tried. A loop marks
// its target tried before the evaluation that follows its first scrape has
// published a report, so the flags alone would answer ready while /metrics
// still lacks the target.
func (d *Daemon) ready() bool {
	names, ok := d.loops.triedTargets()
	if !ok {
		return false
	}
	rep := d.report.Load()
	if rep == nil {
		return false
	}
	tried := make(map[string]bool, len(rep.Targets))
	for _, t := range rep.Targets {
		tried[t.Name] = t.Tried
	}
	for _, n := range names {
		if !tried[n] {
			return false
		}
	}
	return true
}

// handler serves /metrics, the landing page, /config, /-/healthy, /-/ready
// and, with the lifecycle API enabled, /-/reload for this daemon.
func (d *Daemon) handler() http.Handler {
	var reload func(context.Context) error
	if d.opts.EnableLifecycle {
		reload = func(context.Context) error { return d.Reload() }
	}
	return exporter.NewHandler(exporter.Endpoints{
		Report:         d.report.Load,
		Ready:          d.ready,
		Reload:         reload,
		ConfigYAML:     func() ([]byte, error) { return d.config.get().Redacted() },
		Self:           d.self,
		RefreshSeconds: int(time.Duration(d.config.get().Global.ScrapeInterval).Seconds()),
		History:        d.pipe,
		Charts:         d.charts,
	})
}

// ingest hands a scrape result to the pipeline and returns what went wrong
// with the target, if anything.
func (d *Daemon) ingest(r scrape.Result) error {
	if r.Err != nil {
		d.pipe.RecordFailure(r.Target, scrape.FailureReason(r.Err), r.Err, r.Time, r.Duration)
		return r.Err
	}
	return d.pipe.Ingest(r.Target, r.Snapshot, r.Duration)
}

// evaluateEvery publishes a new report now and then every interval until
// ctx ends, counting the evaluations an overrun made it miss.
func (d *Daemon) evaluateEvery(ctx context.Context, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		began := time.Now()
		d.evaluate()
		if n := missedEvaluations(time.Since(began), interval); n > 0 {
			d.eval.missed.Add(float64(n))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// evaluate computes and publishes a report, logs its new warnings and hands
// its alerts to the notifier (which never blocks).
func (d *Daemon) evaluate() {
	d.evalMu.Lock()
	defer d.evalMu.Unlock()
	began := time.Now()
	spec := d.pipe.Spec()
	rep := d.pipe.Evaluate(d.clock.now())
	d.eval.duration.Observe(time.Since(began).Seconds())
	d.report.Store(rep)
	if console.SpecKey(d.pipe.Spec()) == console.SpecKey(spec) { // else a reload came in between: which spec rep is of is not known
		d.charts.Add(rep, spec)
	}
	d.warnOnce(rep)
	d.calibration.Observe(rep)
	d.logTargetStates(rep)
	d.notifier.Notify(rep.Time, rep.Alerts)
}

// warnOnce logs each target warning (such as a threshold off the bucket
// edges) the first time it appears. d.evalMu must be held.
func (d *Daemon) warnOnce(rep *pipeline.Report) {
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
