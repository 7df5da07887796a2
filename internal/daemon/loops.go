package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// scrapeLoops supervises one scrape loop per configured target. The running
// loops belong to the goroutine of run; a reload reaches it through update,
// over a channel, so the two never share the set of loops.
type scrapeLoops struct {
	logger *slog.Logger
	dial   commoncfg.DialContextFunc // nil: the network
	// ingest hands a result to the pipeline and returns the target's error.
	ingest func(scrape.Result) error
	// onAllTried runs once every configured target has been tried, so that
	// ready means serving.
	onAllTried func()
	// now gives the scrape times (the daemon's steadyClock); nil: time.Now.
	now func() time.Time

	updates chan loopUpdate
	done    chan struct{} // closed once run has stopped every loop
	// current lists the running loops for triedTargets (readiness),
	// published by run after every change.
	current atomic.Pointer[[]*runningLoop]
}

// runningLoop is one target's loop as its supervisor knows it.
type runningLoop struct {
	target   config.Target
	settings loopSettings
	cancel   context.CancelFunc
	exited   chan struct{} // closed when the loop's goroutine has returned
	tried    atomic.Bool   // the loop has finished a scrape
	// lastErr is the logKey of the error last logged for the target, and
	// lastRejected the rejectionKey of the last good scrape; only the loop's
	// own goroutine touches them, so a target that stays down, or keeps
	// serving one broken family, logs once.
	lastErr, lastRejected string
}

// loopSettings are the global settings a loop was started with; when they
// change, the loop restarts (the target's own settings are compared with
// config.Target.Equal).
type loopSettings struct {
	interval, timeout time.Duration
	bodyLimit         int64
}

func settingsOf(t config.Target, g config.Global) loopSettings {
	return loopSettings{interval: t.Interval(g), timeout: t.Timeout(g), bodyLimit: int64(g.BodySizeLimit)}
}

// loopUpdate asks the supervisor to apply a configuration.
type loopUpdate struct {
	cfg *config.Config
	// between runs after the loops of changed targets have stopped and
	// before their new loops start.
	between func()
	reply   chan loopChanges
}

// loopChanges names the targets whose loops an update stopped and started,
// sorted; a changed target is in both.
type loopChanges struct {
	stopped, started []string
}

func newScrapeLoops(logger *slog.Logger, dial commoncfg.DialContextFunc, ingest func(scrape.Result) error, onAllTried func()) *scrapeLoops {
	return &scrapeLoops{
		logger:     logger,
		dial:       dial,
		ingest:     ingest,
		onAllTried: onAllTried,
		updates:    make(chan loopUpdate),
		done:       make(chan struct{}),
	}
}

// run starts the loops of cfg, applies updates until ctx ends, then stops
// every loop and waits for all of them.
func (s *scrapeLoops) run(ctx context.Context, cfg *config.Config) error {
	running := map[string]*runningLoop{}
	defer close(s.done)
	defer stopLoops(running)
	s.apply(ctx, running, cfg, nil)
	for {
		select {
		case <-ctx.Done():
			return nil
		case u := <-s.updates:
			u.reply <- s.apply(ctx, running, u.cfg, u.between)
		}
	}
}

// update has run apply cfg and returns what changed; it fails once run has
// stopped. It must not be called before run starts.
func (s *scrapeLoops) update(cfg *config.Config, between func()) (loopChanges, error) {
	u := loopUpdate{cfg: cfg, between: between, reply: make(chan loopChanges, 1)}
	select {
	case s.updates <- u:
		return <-u.reply, nil
	case <-s.done:
		return loopChanges{}, errShuttingDown
	}
}

// stopped reports whether run has stopped every loop for good.
func (s *scrapeLoops) stopped() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// triedTargets names the targets of the running loops, and reports whether
// every one of them has finished a scrape.
func (s *scrapeLoops) triedTargets() ([]string, bool) {
	loops := s.current.Load()
	if loops == nil {
		return nil, false
	}
	names := make([]string, 0, len(*loops))
	for _, l := range *loops {
		if !l.tried.Load() {
			return nil, false
		}
		names = append(names, l.target.Name)
	}
	return names, true
}

// allTried reports whether every running loop has finished a scrape.
func (s *scrapeLoops) allTried() bool {
	_, ok := s.triedTargets()
	return ok
}

// apply stops the loops of targets that are gone or changed, waits for them,
// runs between, and starts a loop for every target without one.
func (s *scrapeLoops) apply(ctx context.Context, running map[string]*runningLoop, cfg *config.Config, between func()) loopChanges {
	want := make(map[string]config.Target, len(cfg.Targets))
	for _, t := range cfg.Targets {
		want[t.Name] = t
	}
	var changes loopChanges
	gone := map[string]*runningLoop{}
	for name, l := range running {
		if t, ok := want[name]; !ok || !l.target.Equal(t) || l.settings != settingsOf(t, cfg.Global) {
			gone[name] = l
			delete(running, name)
			changes.stopped = append(changes.stopped, name)
		}
	}
	stopLoops(gone)
	if between != nil {
		between()
	}
	for _, t := range cfg.Targets {
		if _, ok := running[t.Name]; ok {
			continue
		}
		l, err := s.start(ctx, t, cfg.Global)
		if err != nil {
			s.logger.Error("target not started", "target", t.Name, "err", err)
			continue
		}
		running[t.Name] = l
		changes.started = append(changes.started, t.Name)
	}
	list := make([]*runningLoop, 0, len(running))
	for _, l := range running {
		list = append(list, l)
	}
	s.current.Store(&list)
	slices.Sort(changes.stopped)
	slices.Sort(changes.started)
	return changes
}

// clock returns the scrape clock, time.Now unless one was set.
func (s *scrapeLoops) clock() func() time.Time {
	if s.now == nil {
		return time.Now
	}
	return s.now
}

// stopLoops cancels every loop, then waits for each to return.
func stopLoops(loops map[string]*runningLoop) {
	for _, l := range loops {
		l.cancel()
	}
	for _, l := range loops {
		<-l.exited
	}
}

// start runs a new loop for t; it stops when ctx ends or it is cancelled,
// and then closes its idle connections.
func (s *scrapeLoops) start(ctx context.Context, t config.Target, g config.Global) (*runningLoop, error) {
	profile, err := scrape.LookupProfile(t.Profile)
	if err != nil {
		return nil, err
	}
	var opts []commoncfg.HTTPClientOption
	if s.dial != nil {
		opts = append(opts, commoncfg.WithDialContextFunc(s.dial))
	}
	f, err := scrape.NewFetcher(t.Name, t.URL, t.HTTPClientConfig, t.Timeout(g), int64(g.BodySizeLimit), opts...)
	if err != nil {
		return nil, fmt.Errorf("scrape loop: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &runningLoop{target: t, settings: settingsOf(t, g), cancel: cancel, exited: make(chan struct{})}
	loop := &scrape.Loop{Target: t.Name, Fetcher: f, Profile: profile, Interval: t.Interval(g), Timeout: t.Timeout(g), Now: s.clock()}
	go func() {
		defer close(l.exited)
		defer f.Close()
		loop.Run(ctx, func(r scrape.Result) {
			if ctx.Err() != nil {
				return // stopped mid-scrape: the result is not a failure of the target
			}
			s.handle(l, r)
		})
	}()
	return l, nil
}

// handle ingests one result of loop l, logs the target's error and the
// models its scrapes leave out only when they change (see logKey and
// rejectionKey), and tells the daemon when every target has been tried.
func (s *scrapeLoops) handle(l *runningLoop, r scrape.Result) {
	err := s.ingest(r)
	key := logKey(err)
	switch {
	case key != "" && key != l.lastErr:
		s.logger.Warn("scrape failed", "target", r.Target, "reason", scrape.FailureReason(err), "err", err)
	case key == "" && l.lastErr != "":
		s.logger.Info("scrape recovered", "target", r.Target)
	}
	l.lastErr = key
	if err == nil {
		s.logRejections(l, r.Snapshot)
	}
	if !l.tried.Swap(true) && s.allTried() {
		s.onAllTried()
	}
}

// logRejections logs the models a good scrape left out when the set of
// rejected families, models and reasons changes, and once when none is left
// out any more.
func (s *scrapeLoops) logRejections(l *runningLoop, snap *scrape.Snapshot) {
	key := rejectionKey(snap)
	switch {
	case key != "" && key != l.lastRejected:
		first := snap.Rejected[0]
		s.logger.Warn("models left out of the scrape: a family failed validation for them",
			"target", l.target.Name, "rejected", len(snap.Rejected), "family", first.Family, "model", first.Model, "err", first.Err)
	case key == "" && l.lastRejected != "":
		s.logger.Info("no model left out of the scrape any more", "target", l.target.Name)
	}
	l.lastRejected = key
}
