package daemon

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/config"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/notify"
)

// errShuttingDown refuses a reload that arrives while the daemon stops.
var errShuttingDown = errors.New("shutting down")

// Reload reads the configuration file again and applies it when it is
// valid: the pipeline keeps the history of every target whose name, URL and
// profile did not change, exactly the scrape loops of changed targets are
// restarted, and the notifier is reconfigured only when its settings
// changed. A file that does not load, or whose Alertmanager clients cannot be
// built, leaves the running configuration in place. The outcome is logged
// here, whatever asked for the reload (SIGHUP or POST /-/reload). Reload is
// for a running daemon: it waits for Run's scrape-loop supervisor.
func (d *Daemon) Reload() error {
	err := d.reload()
	if err != nil {
		d.logger.Error("reload failed, keeping the old configuration", "file", d.opts.ConfigFile, "err", err)
		return err
	}
	d.logger.Info("configuration reloaded", "file", d.opts.ConfigFile)
	return nil
}

func (d *Daemon) reload() error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	var nc *notify.Config // set when the notifier's settings changed
	_, cfg, err := d.config.reload(func(running, next *config.Config) error {
		if d.loops.stopped() {
			return errShuttingDown
		}
		if sameNotifierSettings(running, next) {
			return nil
		}
		c, err := notifierConfig(next, d.opts.Dial, d.opts.ExternalURL)
		nc = &c
		return err
	})
	if err != nil {
		return err
	}
	if nc != nil {
		d.notifier.ApplyConfig(*nc)
	}
	spec := d.pipelineSpec(cfg)
	changes, err := d.loops.update(cfg, func() {
		// Between stopping the loops of changed targets and starting their
		// new ones, so that no result of an old loop reaches a new history.
		if err := d.pipe.Reconfigure(spec); err != nil {
			d.logger.Error("reload: history not carried over", "err", err)
		}
		if d.exact != nil {
			d.exact.Reconfigure(cfg)
		}
	})
	if err != nil {
		return err
	}
	if len(changes.stopped)+len(changes.started) > 0 {
		d.logger.Info("scrape loops updated", "stopped", changes.stopped, "started", changes.started)
	}
	d.evaluate()
	return nil
}

// sameNotifierSettings reports whether two configurations give the notifier
// the same settings, in which case a reload leaves it untouched: same
// Alertmanager clients and connections, same record of what was sent.
func sameNotifierSettings(a, b *config.Config) bool {
	return reflect.DeepEqual(a.Alerting, b.Alerting) && a.Global.EvaluationInterval == b.Global.EvaluationInterval
}

// notifierConfig builds the notifier's settings from cfg, with one HTTP
// client per Alertmanager (dial, when set, replaces their dialer); alerts
// link back from externalURL.
func notifierConfig(cfg *config.Config, dial commoncfg.DialContextFunc, externalURL string) (notify.Config, error) {
	a := cfg.Alerting
	nc := notify.Config{
		ResendDelay:        time.Duration(a.ResendDelay),
		EvaluationInterval: time.Duration(cfg.Global.EvaluationInterval),
		ExternalLabels:     a.ExternalLabels,
		PerTarget:          a.PerTarget,
		GeneratorURL:       externalURL,
	}
	var opts []commoncfg.HTTPClientOption
	if dial != nil {
		opts = append(opts, commoncfg.WithDialContextFunc(dial))
	}
	for i, am := range a.Alertmanagers {
		shown := config.RedactURL(am.URL)
		client, err := commoncfg.NewClientFromConfig(am.HTTPClientConfig, fmt.Sprintf("alertmanager-%d", i), opts...)
		if err != nil {
			return notify.Config{}, fmt.Errorf("alertmanager %s: %w", shown, err)
		}
		nc.Alertmanagers = append(nc.Alertmanagers, notify.Alertmanager{URL: am.URL, Display: shown, Client: client, Timeout: time.Duration(am.Timeout)})
	}
	return nc, nil
}
