package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/exporter"
)

// stateMetrics tell the operator whether the state file is being written.
type stateMetrics struct {
	saves, failures prometheus.Counter
	lastSave        prometheus.Gauge
}

func newStateMetrics(reg prometheus.Registerer) stateMetrics {
	m := stateMetrics{
		saves: prometheus.NewCounter(prometheus.CounterOpts{
			Name: exporter.Namespace + "_exporter_state_saves_total",
			Help: "Writes of the state file, successful or not.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: exporter.Namespace + "_exporter_state_save_failures_total",
			Help: "Failed writes of the state file.",
		}),
		lastSave: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: exporter.Namespace + "_exporter_state_last_save_timestamp_seconds",
			Help: "Time the state file was last written.",
		}),
	}
	reg.MustRegister(m.saves, m.failures, m.lastSave)
	return m
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old file or the new one, never a torn one: write a temporary file in the
// same directory, fsync it, rename it over path, fsync the directory. The file
// is private (0600): it holds the history of the targets.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// loadState restores the history from the state file, if one is configured
// and present, after removing the temporary files of interrupted saves.
// Any problem is logged and the daemon starts fresh.
func (d *Daemon) loadState() {
	path := d.config.get().StateFile
	if path == "" {
		return
	}
	d.removeStateDebris(path)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		d.logger.Info("no state file yet, starting fresh", "file", path)
		return
	}
	if err != nil {
		d.logger.Error("state file unreadable, starting fresh", "file", path, "err", err)
		return
	}
	n, err := d.pipe.UnmarshalState(data)
	if err != nil {
		d.logger.Error("state file not usable, starting fresh", "file", path, "err", err)
		return
	}
	d.logger.Info("state restored", "file", path, "targets", n)
}

// saveState writes the state file, if one is configured.
func (d *Daemon) saveState() {
	path := d.config.get().StateFile
	if path == "" {
		return
	}
	d.state.saves.Inc()
	data, err := d.pipe.MarshalState()
	if err == nil {
		err = writeFileAtomic(path, data)
	}
	if err != nil {
		d.state.failures.Inc()
		d.logger.Error("state not saved", "file", path, "err", err)
		return
	}
	d.state.lastSave.SetToCurrentTime()
}

// saveStateEvery saves the state every interval until ctx ends (not at all
// when interval is not positive). The last save is Run's, after every other
// actor has stopped.
func (d *Daemon) saveStateEvery(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		<-ctx.Done()
		return nil
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			d.saveState()
		}
	}
}
