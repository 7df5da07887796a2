package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/alertquality"
)

// WriteBlocks writes the fleet's history as TSDB blocks under dir, for
// Prometheus's --storage.tsdb.path, with `promtool tsdb create-blocks-from
// openmetrics`: one OpenMetrics file per 2 h block (promtool reads its whole
// input once per 2 h block of it, so one file for 30 days would be read 360
// times, and at 100 targets would not fit on most disks). It returns the
// number of samples written.
func (f Fleet) WriteBlocks(dir, scratch string) (int, error) {
	names := f.seriesNames()
	const block = 2 * time.Hour
	var (
		file  *os.File
		bw    *bufio.Writer
		until int64
		n     int
	)
	finish := func() error {
		if file == nil {
			return nil
		}
		bw.WriteString("# EOF\n")
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write openmetrics: %w", err)
		}
		if err := file.Close(); err != nil {
			return fmt.Errorf("write openmetrics: %w", err)
		}
		out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", "--quiet", file.Name(), dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("promtool tsdb create-blocks-from openmetrics: %w\n%s", err, out)
		}
		file = nil
		return os.Remove(filepath.Join(scratch, "block.om"))
	}
	err := f.Walk(func(s FleetSample) error {
		if file == nil || s.T >= until {
			if err := finish(); err != nil {
				return err
			}
			var err error
			if file, err = os.Create(filepath.Join(scratch, "block.om")); err != nil {
				return fmt.Errorf("openmetrics file: %w", err)
			}
			bw = bufio.NewWriterSize(file, 1<<20)
			until = (s.T/block.Milliseconds() + 1) * block.Milliseconds()
		}
		n++
		_, err := fmt.Fprintf(bw, "%s %s %s\n", names[s.Series], strconv.FormatFloat(s.V, 'g', -1, 64), strconv.FormatFloat(float64(s.T)/1000, 'f', 3, 64))
		return err
	})
	if err != nil {
		return n, err
	}
	return n, finish()
}

// seriesNames is the text of every series of Series, in its order.
func (f Fleet) seriesNames() []string {
	series := f.Series()
	names := make([]string, len(series))
	for i, ls := range series {
		names[i] = alertquality.SeriesText(ls)
	}
	return names
}

// WriteImport writes the fleet's history in the Prometheus text format
// with millisecond timestamps that VictoriaMetrics' /api/v1/import/prometheus
// reads, and returns the number of samples written.
func (f Fleet) WriteImport(w io.Writer) (int, error) {
	names := f.seriesNames()
	bw := bufio.NewWriterSize(w, 1<<20)
	n := 0
	err := f.Walk(func(s FleetSample) error {
		n++
		_, err := fmt.Fprintf(bw, "%s %s %d\n", names[s.Series], strconv.FormatFloat(s.V, 'g', -1, 64), s.T)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("write import: %w", err)
	}
	return n, bw.Flush()
}
