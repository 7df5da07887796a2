package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// staleTempAge is how old a temporary state file must be before start-up
// removes it. A save writes and renames its temporary file within seconds,
// so a file a minute old was left by a daemon killed mid-save; a younger one
// may belong to another daemon saving right now and is left alone.
const staleTempAge = time.Minute

// tempPrefix is the name writeFileAtomic gives the temporary files of path,
// before os.CreateTemp's random suffix.
func tempPrefix(path string) string {
	return "." + filepath.Base(path) + ".tmp-"
}

// removeStaleTemps removes the temporary files that saves of path left
// behind when the daemon was killed mid-save (modified before now minus
// staleTempAge), and returns the names removed. Only regular files named by
// tempPrefix(path) in path's directory are touched. Errors name the file.
func removeStaleTemps(path string, now time.Time) (removed []string, err error) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("look for leftover temporary state files in %s: %w", dir, err)
	}
	prefix := tempPrefix(path)
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < staleTempAge {
			continue // gone meanwhile, or a save in progress
		}
		name := filepath.Join(dir, e.Name())
		if err := os.Remove(name); err != nil {
			errs = append(errs, fmt.Errorf("remove leftover temporary state file: %w", err))
			continue
		}
		removed = append(removed, name)
	}
	if len(errs) > 0 {
		return removed, errs[0]
	}
	return removed, nil
}

// removeStateDebris removes and logs what removeStaleTemps finds for the
// configured state file, if any.
func (d *Daemon) removeStateDebris(path string) {
	removed, err := removeStaleTemps(path, time.Now())
	if len(removed) > 0 {
		d.logger.Info("removed temporary state files left by an interrupted save", "files", removed)
	}
	if err != nil {
		d.logger.Warn("leftover temporary state files not removed", "err", err)
	}
}
