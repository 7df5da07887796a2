package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/test/alertquality"
)

// WriteBlocks writes the fleet's history as TSDB blocks under dir, for
// Prometheus's --storage.tsdb.path, with `promtool tsdb create-blocks-from
// openmetrics`: one OpenMetrics file per 2 h block (promtool reads its whole
// input once per 2 h block of it, so one file for 30 days would be read 360
// times, and at 100 targets would not fit on most disks). promtool turns
// one block's file into a block while the next file is written (at most
// two files on disk), which at 500 targets halves the backfill's wall
// time on two cores. It returns the number of samples written.
func (f Fleet) WriteBlocks(dir, scratch string) (int, error) {
	names := f.seriesNames()
	const block = 2 * time.Hour
	var (
		file    *os.File
		bw      *bufio.Writer
		until   int64
		n, seq  int
		pending chan error
	)
	// wait collects the promtool run of the previous file, if any.
	wait := func() error {
		if pending == nil {
			return nil
		}
		err := <-pending
		pending = nil
		return err
	}
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
		if err := wait(); err != nil {
			return err
		}
		name := file.Name()
		file = nil
		pending = make(chan error, 1)
		go func() {
			out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", "--quiet", name, dir).CombinedOutput()
			if err != nil {
				pending <- fmt.Errorf("promtool tsdb create-blocks-from openmetrics %s: %w\n%s", name, err, out)
				return
			}
			pending <- os.Remove(name)
		}()
		return nil
	}
	err := f.Walk(func(s FleetSample) error {
		if file == nil || s.T >= until {
			if err := finish(); err != nil {
				return err
			}
			var err error
			seq++
			if file, err = os.Create(filepath.Join(scratch, fmt.Sprintf("block-%d.om", seq%2))); err != nil {
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
		if file != nil {
			file.Close()
		}
		return n, errors.Join(err, wait())
	}
	if err := finish(); err != nil {
		return n, errors.Join(err, wait())
	}
	return n, wait()
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
	var line []byte
	err := f.Walk(func(s FleetSample) error {
		n++
		line = appendImportLine(line[:0], names, s)
		_, err := bw.Write(line)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("write import: %w", err)
	}
	return n, bw.Flush()
}

// appendImportLine appends one sample as a line of the import format.
func appendImportLine(b []byte, names []string, s FleetSample) []byte {
	return fmt.Appendf(b, "%s %s %d\n", names[s.Series], strconv.FormatFloat(s.V, 'g', -1, 64), s.T)
}

// LiveImport is the fleet's import in two parts, as a live engine receives
// it: History takes every sample up to End and is closed there; Scrape
// takes each later scrape's samples (Ahead of End), one scrape time at a
// time and in order, in the format of WriteImport. A Scrape that waits for
// its time to come feeds the scrapes at the pace of the clock, so the
// engine stores the newest minutes as it would store live scrapes rather
// than in the blocks of one import.
type LiveImport struct {
	History io.WriteCloser
	Scrape  func(at time.Time, body []byte) error
}

// WriteImportLive writes the fleet as li's two parts and returns the
// number of samples of the history. Concatenated, History and the Scrape
// bodies are WriteImport's text.
func (f Fleet) WriteImportLive(li LiveImport) (int, error) {
	names := f.seriesNames()
	end := f.End.UnixMilli()
	bw := bufio.NewWriterSize(li.History, 1<<20)
	var (
		history, at int64
		line        []byte
		scrape      []byte
		closed      bool
	)
	closeHistory := func() error {
		if closed {
			return nil
		}
		closed = true
		if err := bw.Flush(); err != nil {
			return err
		}
		return li.History.Close()
	}
	err := f.Walk(func(s FleetSample) error {
		if s.T <= end {
			history++
			line = appendImportLine(line[:0], names, s)
			_, err := bw.Write(line)
			return err
		}
		if err := closeHistory(); err != nil {
			return err
		}
		if s.T != at && len(scrape) > 0 {
			if err := li.Scrape(time.UnixMilli(at), scrape); err != nil {
				return err
			}
			scrape = scrape[:0]
		}
		at = s.T
		scrape = appendImportLine(scrape, names, s)
		return nil
	})
	if err == nil {
		err = closeHistory()
	}
	if err == nil && len(scrape) > 0 {
		err = li.Scrape(time.UnixMilli(at), scrape)
	}
	if err != nil {
		return int(history), fmt.Errorf("write live import: %w", err)
	}
	return int(history), nil
}
