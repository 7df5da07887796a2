package daemon

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// TestReloadGoodFile adds a target and changes a goal by POST /-/reload: the
// new target is first scraped at its offset into the interval, the kept one
// keeps its schedule and its history, /config shows the new file and the
// reload gauges say so.
func TestReloadGoodFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a, b := serveTarget(t, n, "a"), serveTarget(t, n, "b")
		r := startRig(t, n, testConfig([]string{"a " + a.url()}, ""))
		advance(3 * time.Minute)
		startA := r.windowStart("a")

		r.write(strings.Replace(testConfig([]string{"a " + a.url(), "b " + b.url()}, ""), "goal: 0.99", "goal: 0.95", 1))
		reloadedAt := time.Now()
		if code, body := r.do(http.MethodPost, "/-/reload"); code != http.StatusOK {
			t.Fatalf("POST /-/reload = %d %s, want 200", code, body)
		}
		synctest.Wait()
		if got := b.scrapedSince(reloadedAt); got != 0 {
			t.Errorf("new target b scraped %d times at the reload, want 0 (it waits its offset)", got)
		}
		if got := a.scrapedSince(reloadedAt); got != 0 {
			t.Errorf("kept target a scraped %d times at the reload, want 0 (its loop kept its schedule)", got)
		}
		if got := r.windowStart("a"); !got.Equal(startA) {
			t.Errorf("target a's 1h window starts at %v after the reload, %v before: history lost", got, startA)
		}
		advance(15 * time.Second)
		offset := (&scrape.Loop{Target: "b", Interval: 15 * time.Second}).Offset()
		if got := b.scrapedAt(); len(got) != 1 || !got[0].Equal(reloadedAt.Add(offset)) {
			t.Errorf("new target b scraped at %v in the interval after the reload, want once, at its offset %v after it", got, offset)
		}
		if !r.targetReport("b").Up {
			t.Errorf("target b not up in the report an interval after the reload")
		}
		if _, body := r.do(http.MethodGet, "/config"); !strings.Contains(body, "goal: 0.95") {
			t.Errorf("/config does not show the new goal:\n%s", body)
		}
		if ok := testutil.ToFloat64(r.d.config.lastReloadOK); ok != 1 {
			t.Errorf("config_last_reload_successful = %v, want 1", ok)
		}
		if ts := testutil.ToFloat64(r.d.config.lastReloadSuccess); ts != float64(reloadedAt.Unix()) {
			t.Errorf("config_last_reload_success_timestamp_seconds = %v, want %v", ts, reloadedAt.Unix())
		}
		if !strings.Contains(r.log.String(), "configuration reloaded") {
			t.Errorf("log does not say the configuration was reloaded:\n%s", r.log)
		}
	})
}

// TestReloadBadFileKept feeds an invalid file, by HTTP and by SIGHUP: the
// running configuration and loops stay, the failure is logged both ways,
// the gauge drops to 0, and the next good reload sets it back.
func TestReloadBadFileKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		good := testConfig([]string{"a " + a.url()}, "")
		r := startRig(t, n, good)
		advance(time.Minute)
		running := r.d.config.get()

		r.write("global:\n  scrape_interval: soon\n")
		failedAt := time.Now()
		code, body := r.do(http.MethodPost, "/-/reload")
		if code != http.StatusInternalServerError || !strings.Contains(body, "scrape_interval") {
			t.Errorf("POST /-/reload of a bad file = %d %q, want 500 naming the field", code, body)
		}
		r.signals <- syscall.SIGHUP
		synctest.Wait()
		if got := strings.Count(r.log.String(), "reload failed, keeping the old configuration"); got != 2 {
			t.Errorf("%d reload failures logged, want 2 (HTTP and SIGHUP):\n%s", got, r.log)
		}
		if r.d.config.get() != running {
			t.Errorf("a bad file replaced the running configuration")
		}
		if ok := testutil.ToFloat64(r.d.config.lastReloadOK); ok != 0 {
			t.Errorf("config_last_reload_successful = %v after a bad reload, want 0", ok)
		}
		if got := a.scrapedSince(failedAt); got != 0 {
			t.Errorf("target a scraped %d times at the failed reload, want 0 (loop untouched)", got)
		}
		advance(time.Minute)
		if got := a.scrapedSince(failedAt); got != 4 {
			t.Errorf("target a scraped %d times in the minute after a bad reload, want 4", got)
		}

		r.write(good)
		if err := r.d.Reload(); err != nil {
			t.Fatalf("reload of the good file: %v", err)
		}
		if ok := testutil.ToFloat64(r.d.config.lastReloadOK); ok != 1 {
			t.Errorf("config_last_reload_successful = %v after a good reload, want 1", ok)
		}
	})
}

// TestReloadChangedTarget moves target b to another URL and leaves a alone:
// b's loop restarts on the new server, the old one is never scraped again,
// b's history starts afresh, and a keeps its history.
func TestReloadChangedTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a, b, c := serveTarget(t, n, "a"), serveTarget(t, n, "b"), serveTarget(t, n, "c")
		r := startRig(t, n, testConfig([]string{"a " + a.url(), "b " + b.url()}, ""))
		advance(3 * time.Minute)
		startA, startB := r.windowStart("a"), r.windowStart("b")

		r.write(testConfig([]string{"a " + a.url(), "b " + c.url()}, ""))
		reloadedAt := time.Now()
		if err := r.d.Reload(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := c.scrapedSince(reloadedAt); got != 0 {
			t.Errorf("b's new server scraped %d times at the reload, want 0 (the new loop waits its offset)", got)
		}
		advance(2 * time.Minute)
		if got := c.scrapedSince(reloadedAt); got != 8 {
			t.Errorf("b's new server scraped %d times in the 2 minutes after the reload, want 8", got)
		}
		if got := b.scrapedSince(reloadedAt); got != 0 {
			t.Errorf("b's old server scraped %d times after the reload, want 0", got)
		}
		if got := r.windowStart("b"); got.Before(reloadedAt) {
			t.Errorf("b's 1h window starts at %v, before the reload at %v (was %v): the old URL's history was kept", got, reloadedAt, startB)
		}
		if got := r.windowStart("a"); !got.Equal(startA) {
			t.Errorf("a's 1h window starts at %v, %v before the reload: history lost", got, startA)
		}
	})
}

// TestReloadKeepsNotifier: a reload that leaves the alerting section alone
// keeps the notifier's settings (same Alertmanager clients, so the same
// connections and no re-send); one that changes it replaces them in place.
func TestReloadKeepsNotifier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		a := serveTarget(t, n, "a")
		alerting := "alerting:\n  alertmanagers:\n    - url: http://am:9093\n"
		r := startRig(t, n, testConfig([]string{"a " + a.url()}, alerting))
		client := func() *http.Client { return r.d.notifier.Config().Alertmanagers[0].Client }
		before := client()

		r.write(strings.Replace(testConfig([]string{"a " + a.url()}, alerting), "goal: 0.99", "goal: 0.9", 1))
		if err := r.d.Reload(); err != nil {
			t.Fatal(err)
		}
		if client() != before {
			t.Errorf("a reload with the same alerting section rebuilt the Alertmanager client")
		}
		r.write(testConfig([]string{"a " + a.url()}, alerting+"  resend_delay: 5m\n"))
		if err := r.d.Reload(); err != nil {
			t.Fatal(err)
		}
		if client() == before {
			t.Errorf("a reload that changed the alerting section kept the old Alertmanager client")
		}
	})
}

// TestReloadStormLeavesNothingBehind grows the fleet from 2 targets to 20
// and back, five times: right after the last reload the goroutines (loops,
// keep-alive connections on both sides) are exactly what they were with the
// 2 targets, without waiting for any idle timeout.
func TestReloadStormLeavesNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		var small, big []string
		for i := range 20 {
			ft := serveTarget(t, n, fmt.Sprintf("t%02d", i))
			entry := ft.host + " " + ft.url()
			big = append(big, entry)
			if i < 2 {
				small = append(small, entry)
			}
		}
		r := startRig(t, n, testConfig(small, ""))
		goroutines := bubbleGoroutines()
		for range 5 {
			for _, targets := range [][]string{big, small} {
				r.write(testConfig(targets, ""))
				if err := r.d.Reload(); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
			}
		}
		if got := bubbleGoroutines(); got != goroutines {
			t.Errorf("%d goroutines after 10 reloads between 2 and 20 targets, %d before", got, goroutines)
		}
	})
}
