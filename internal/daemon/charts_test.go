package daemon

import (
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestChartsKeepTheReports: the daemon keeps every evaluation it publishes
// for the console's charts, one a scrape interval in the finest tier and
// half as many in each coarser one (about twice as many in all); a reload
// that changes
// what the charts draw (here the windows) drops the evaluations of the old
// configuration, and the ring fills again from the new one's.
func TestChartsKeepTheReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ft := serveTarget(t, n, "gpu0")
		cfg := testConfig([]string{"gpu0 " + ft.url()}, "")
		r := startRig(t, n, cfg)
		advance(10 * time.Minute)
		if got := r.d.charts.Len(); got < 70 || got > 90 {
			t.Fatalf("after 10 minutes of 15 s evaluations the ring holds %d, want about 80", got)
		}
		r.write(strings.Replace(cfg, "windows: [1m, 5m, 1h]", "windows: [1m, 5m]", 1))
		if err := r.d.Reload(); err != nil {
			t.Fatal(err)
		}
		if got := r.d.charts.Len(); got > 10 {
			t.Fatalf("after a reload that changed the windows the ring holds %d, want only the reload's evaluation (once a tier)", got)
		}
		advance(5 * time.Minute)
		if got := r.d.charts.Len(); got < 30 {
			t.Fatalf("5 minutes after the reload the ring holds %d, want about 40", got)
		}
		if err := r.stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	})
}
