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
// A file that is present but cannot be used (damaged, truncated, empty, of
// another format) is logged and the daemon starts fresh; the first save
// moves it aside before writing (see saveState), so that nothing that might
// still be recovered is destroyed, and a start that fails before saving
// (the port taken by the daemon that owns the file) leaves it alone. Saved
// targets the configuration no longer has are kept for revival (see
// pipeline.Pipeline.Retired), and the log names them.
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
	if err == nil {
		var n int
		pipe, capacity, pipeErr, capErr := splitState(data)
		d.restoreCapacity(path, capacity, capErr)
		if err = pipeErr; err == nil {
			n, err = d.pipe.UnmarshalState(pipe)
		}
		if err == nil {
			d.logger.Info("state restored", "file", path, "targets", n)
			if kept := d.pipe.Retired(); len(kept) > 0 {
				d.logger.Warn("saved targets absent from the configuration: history kept for revival and saved with the state, not scraped",
					"file", path, "targets", kept)
			}
			return
		}
	}
	d.saveMu.Lock()
	d.unusableState = path
	d.saveMu.Unlock()
	d.logger.Error("state file not usable, starting fresh; it is moved aside before the first save", "file", path, "err", err)
}

// setAside renames the unusable state file at path to
// <path>.corrupt-<UTC time> in the same directory and returns the new name.
// The name never matches tempPrefix, so start-up never removes it. A file
// already gone is not an error (there is nothing left to keep).
func setAside(path string, now time.Time) (string, error) {
	aside := path + ".corrupt-" + now.UTC().Format("20060102T150405.000Z")
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("move the unusable state file %s aside (not saving over it): %w", path, err)
	}
	return aside, nil
}

// saveState writes the state file, if one is configured. The first save
// after start-up found the file unusable moves it aside first, and writes
// nothing while that fails. Saved targets absent from the configuration for
// longer than their retention are dropped first
// (pipeline.Pipeline.ExpireRetired). A failing save is counted each time
// and logged once per change of its error (digits masked, as logKey does),
// with one line when saving works again.
func (d *Daemon) saveState() {
	path := d.config.get().StateFile
	if path == "" {
		return
	}
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	d.state.saves.Inc()
	err := d.setAsideIfPending(path)
	if err == nil {
		for _, name := range d.pipe.ExpireRetired(d.clock.now()) {
			d.logger.Info("retired target dropped from the state: its history is past the retention", "target", name)
		}
		var data []byte
		data, err = d.pipe.MarshalState()
		if err == nil {
			data, err = d.stateToSave(data)
		}
		if err == nil {
			err = writeFileAtomic(path, data)
		}
	}
	if err != nil {
		d.state.failures.Inc()
		if key := maskDigits(err.Error()); key != d.saveErrKey {
			d.saveErrKey = key
			d.logger.Error("state not saved (logged again only when the error changes; see vllm_slo_exporter_state_save_failures_total)", "file", path, "err", err)
		}
		return
	}
	if d.saveErrKey != "" {
		d.saveErrKey = ""
		d.logger.Info("state saved again", "file", path)
	}
	d.state.lastSave.SetToCurrentTime()
}

// setAsideIfPending moves the unusable state file aside if start-up found
// one at path and it is not moved yet (a reload that names another state
// file leaves the unusable one alone: nothing will write over it). d.saveMu
// must be held.
func (d *Daemon) setAsideIfPending(path string) error {
	if d.unusableState != path {
		d.unusableState = ""
		return nil
	}
	aside, err := setAside(path, d.clock.now())
	if err != nil {
		return err
	}
	d.unusableState = ""
	if aside != "" {
		d.logger.Warn("unusable state file moved aside before the first save", "file", path, "moved_to", aside)
	}
	return nil
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
