package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// fakeAlertmanager records what the notifier sends and the connections it
// opens.
type fakeAlertmanager struct {
	mu    sync.Mutex
	conns int            // connections ever accepted
	sends map[string]int // alert (its sorted labels, and its target annotation) -> times received
	posts int
}

// serveAlertmanager starts a fake Alertmanager at host:9093 on n.
func serveAlertmanager(t *testing.T, n *memNet, host string) *fakeAlertmanager {
	am := &fakeAlertmanager{sends: map[string]int{}}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var alerts []struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			}
			body, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(body, &alerts); err != nil {
				t.Errorf("alertmanager: %v: %s", err, body)
			}
			am.mu.Lock()
			defer am.mu.Unlock()
			am.posts++
			for _, a := range alerts {
				// Alerts of several targets may share their labels and
				// name their target in an annotation.
				kv := []string{"annotation:target=" + a.Annotations["target"]}
				for k, v := range a.Labels {
					kv = append(kv, k+"="+v)
				}
				sort.Strings(kv)
				am.sends[strings.Join(kv, ",")]++
			}
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				am.mu.Lock()
				am.conns++
				am.mu.Unlock()
			}
		},
	}
	go srv.Serve(n.listen(host + ":9093"))
	t.Cleanup(func() { srv.Close() })
	return am
}

// snapshot returns the connections accepted, the posts and how many times
// each alert was received.
func (am *fakeAlertmanager) snapshot() (conns, posts int, sends map[string]int) {
	am.mu.Lock()
	defer am.mu.Unlock()
	return am.conns, am.posts, maps.Clone(am.sends)
}

// TestReloadStorm: 200 reloads in 3 seconds that swing the fleet between 5
// and 105 targets, with an Alertmanager configured and alerts firing. The
// 5 kept targets' loops are never restarted (no extra scrape), the notifier
// is never rebuilt (same client, no new connection to the Alertmanager, no
// alert sent twice within its resend delay), and one scrape interval after
// the storm (40 reloads under -race, which slows it tenfold) the goroutines (loops, connections on both sides) are exactly
// what they were before it.
func TestReloadStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		am := serveAlertmanager(t, n, "am")
		var kept []string
		var keptTargets []*fakeTarget
		for i := range 5 {
			ft := serveTarget(t, n, fmt.Sprintf("k%d", i))
			keptTargets = append(keptTargets, ft)
			kept = append(kept, ft.host+" "+ft.url())
		}
		// The 100 extra targets: half answer an empty exposition (their
		// connections are kept alive), half refuse the connection.
		empty := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
		go empty.Serve(n.listen("empty:80"))
		t.Cleanup(func() { empty.Close() })
		big := append([]string(nil), kept...)
		for i := range 100 {
			host := "empty:80"
			if i%2 == 1 {
				host = "gone:80"
			}
			big = append(big, fmt.Sprintf("x%03d http://%s/metrics?n=%d", i, host, i))
		}
		// An objective no request meets, so the page alert fires at once.
		alerting := `alerting:
  alertmanagers:
    - url: http://am:9093
`
		cfg := func(targets []string) string {
			return strings.Replace(testConfig(targets, alerting), "    objectives: {ttft: 500ms}\n",
				"    objectives: {ttft: 1ms}\n    alerts:\n      - {severity: page, long_window: 5m, short_window: 1m, budget_consumed: 0.02, for: 0s}\n", 1)
		}
		r := startRig(t, n, cfg(kept))
		advance(5 * time.Minute)
		conns, posts, _ := am.snapshot()
		if posts == 0 || conns == 0 {
			t.Fatalf("no alert sent to the Alertmanager before the storm; log:\n%s", r.log)
		}
		client := r.d.notifier.Config().Alertmanagers[0].Client
		// Start the storm at a send, so that the next resend falls due one
		// resend delay later, after the storm (when the alert began to fire
		// depends on the targets' offsets).
		for _, p, _ := am.snapshot(); p == posts; _, p, _ = am.snapshot() {
			advance(15 * time.Second)
		}
		resendDelay := time.Duration(r.d.config.get().Alerting.ResendDelay)
		base := bubbleGoroutines()
		_, postsBefore, sendsBefore := am.snapshot()
		stormAt := time.Now()

		reloads := 200
		if raceEnabled {
			reloads = 40 // the same swings, fewer of them: 200 take over a minute under -race
		}
		for i := range reloads {
			r.write(cfg([][]string{big, kept}[i%2]))
			if i%2 == 0 {
				r.signals <- syscall.SIGHUP
			} else if err := r.d.Reload(); err != nil {
				t.Fatal(err)
			}
			advance(15 * time.Millisecond)
		}
		if took := time.Since(stormAt); took > 3*time.Second+time.Second/2 {
			t.Fatalf("the storm took %v", took)
		}
		for _, ft := range keptTargets {
			if got := ft.scrapedSince(stormAt); got > 1 {
				t.Errorf("kept target %s scraped %d times during the storm: its loop was restarted", ft.host, got)
			}
		}
		if r.d.notifier.Config().Alertmanagers[0].Client != client {
			t.Errorf("the storm rebuilt the Alertmanager client")
		}
		if c, p, _ := am.snapshot(); c != conns || p != postsBefore {
			t.Errorf("during the storm: %d new connections and %d posts to the Alertmanager, want none (resend delay not due)", c-conns, p-postsBefore)
		}
		advance(15 * time.Second)
		if got := bubbleGoroutines(); got != base {
			t.Errorf("%d goroutines one scrape interval after %d reloads, %d before", got, reloads, base)
		}
		if got := countLines(r.log.String(), "configuration reloaded"); got != reloads {
			t.Errorf("%d reloads logged, want %d", got, reloads)
		}
		// The resend falls due after the storm: every alert exactly once
		// more, on the connection already open.
		advance(time.Until(stormAt.Add(resendDelay)))
		c, _, sends := am.snapshot()
		if c != conns {
			t.Errorf("%d new connections to the Alertmanager after the storm, want 0", c-conns)
		}
		for alert, before := range sendsBefore {
			if got := sends[alert] - before; got != 1 {
				t.Errorf("alert %s sent %d times in the resend delay after the storm, want 1", alert, got)
			}
		}
	})
}
