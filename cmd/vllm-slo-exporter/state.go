package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// writeFileAtomic replaces path with data so that a crash leaves either the
// old file or the new one, never a torn one: write a temporary file in the
// same directory, fsync it, rename it over path, fsync the directory. The file
// is private (0600): it holds the history of the targets.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
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
// and present. Any problem is logged and the daemon starts fresh.
func (d *daemon) loadState() {
	path := d.cfg.StateFile
	if path == "" {
		return
	}
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
func (d *daemon) saveState() {
	d.mu.Lock()
	path := d.cfg.StateFile
	d.mu.Unlock()
	if path == "" {
		return
	}
	data, err := d.pipe.MarshalState()
	if err == nil {
		err = writeFileAtomic(path, data)
	}
	if err != nil {
		d.stateErrors.Inc()
		d.logger.Error("state not saved", "file", path, "err", err)
		return
	}
	d.stateSaved.SetToCurrentTime()
}

// saveStateEvery saves the state at the configured interval until ctx ends.
func (d *daemon) saveStateEvery(ctx context.Context) {
	defer d.wg.Done()
	d.mu.Lock()
	interval := time.Duration(d.cfg.Global.StateSaveInterval)
	d.mu.Unlock()
	if interval <= 0 {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			d.saveState()
		}
	}
}
