package e2e

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// statusConfig has one SLO with a fast page over 10s/5s windows and a 10m
// window, which stays below half its length (filling) for five minutes.
const statusConfig = `global:
  scrape_interval: 500ms
  scrape_timeout: 500ms
  evaluation_interval: 250ms
  windows: [2s, 5s, 10m]
  quantiles: [0.5, 0.99]
targets:
  - name: overloaded
    url: %s
  - name: healthy
    url: %s
slos:
  - name: interactive
    objectives: {ttft: 500ms, tpot: 50ms}
    goal: 0.99
    period: 1h
    alerts:
      - {severity: page, long_window: 10s, short_window: 5s, budget_consumed: 0.01, for: 1s}
`

var (
	sloRowTag   = regexp.MustCompile(`<tr class="slo[^"]*" data-model="([^"]*)" data-slo="([^"]*)" data-state="([^"]*)">(?s:.*?)<td>([^<]*)</td>`)
	alertRowTag = regexp.MustCompile(`(?s)<tr class="alert (firing|pending)">(.*?)</tr>`)
	cellTag     = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
)

// checkStatusRows checks an overview's SLO rows against its Alerts table:
// each row's state is the worst of the firing or pending alerts of its
// target, model and SLO ("ok" without any), and no row comes after one in a
// better state. It returns the rows (model, SLO, state, target).
func checkStatusRows(t *testing.T, dom string) [][]string {
	t.Helper()
	type key struct{ target, model, slo string }
	alerts := map[key]string{}
	for _, m := range alertRowTag.FindAllStringSubmatch(dom, -1) {
		cells := cellTag.FindAllStringSubmatch(m[2], -1)
		if len(cells) < 7 {
			t.Fatalf("alert row with %d cells: %s", len(cells), m[0])
		}
		k := key{html.UnescapeString(cells[6][1]), html.UnescapeString(cells[5][1]), html.UnescapeString(cells[4][1])}
		if alerts[k] != "firing" {
			alerts[k] = m[1]
		}
	}
	rows := sloRowTag.FindAllStringSubmatch(dom, -1)
	if len(rows) != 2 {
		t.Fatalf("%d SLO rows, want 2:\n%s", len(rows), tail(dom, 3000))
	}
	rank := map[string]int{"firing": 0, "pending": 1, "ok": 2}
	last := 0
	for _, r := range rows {
		k := key{html.UnescapeString(r[4]), html.UnescapeString(r[1]), html.UnescapeString(r[2])}
		want := alerts[k]
		if want == "" {
			want = "ok"
		}
		if r[3] != want {
			t.Errorf("row %v reads %q, its alerts say %q", k, r[3], want)
		}
		if rank[r[3]] < last {
			t.Errorf("row %v (%s) comes after a row in a better state: not worst first", k, r[3])
		}
		last = rank[r[3]]
	}
	return rows
}

// TestConsoleStatusChromium runs the daemon over an overloaded and a
// healthy simulator and reads the console as headless Chromium renders it:
// each SLO row's state is the worst state of the firing or pending alerts
// of its model and SLO (burn-rate alerts carry no target label: they are
// matched by the target they came from), rows come worst first, the goal is
// printed, the filling 10m window is marked, and the detail page shows its
// headline tiles and redraws itself.
func TestConsoleStatusChromium(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	over := startSim(t, func(c *sim.Config) {
		c.Models[0].Workload.Phases = []sim.Phase{{Kind: sim.Poisson, Rate: 4 * sim.DemoRate}}
	})
	healthy := startSim(t, nil)
	d := startDaemon(t, t.TempDir(), fmt.Sprintf(statusConfig, over.url(), healthy.url()))
	waitFor(t, 30*time.Second, "the page to fire for the overloaded target", func() bool {
		for _, s := range d.metrics(t).find("vllm_slo_alert_firing", map[string]string{"target": "overloaded", "severity": "page"}) {
			if s.value == 1 {
				return true
			}
		}
		return false
	})

	// The page may resolve and fire again between two evaluations (its 5s
	// window holds few requests): the rows must agree with the alerts of the
	// same page every time, and the firing row must lead once it is seen.
	var dom string
	for deadline := time.Now().Add(90 * time.Second); ; {
		dom = runChromium(t, chromium, d.base+"/", "--dump-dom")
		if rows := checkStatusRows(t, dom); len(rows) > 0 && rows[0][3] == "firing" {
			if rows[0][4] != "overloaded" {
				t.Errorf("the firing row is target %q's, not the overloaded one's", rows[0][4])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no overview in 90 s showed the overloaded target's SLO firing first:\n%s", tail(dom, 3000))
			break
		}
	}
	for _, want := range []string{"goal 99%", "ttft ≤ 500ms", `class="filling-mark"`, "of 10m"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}

	// Past one redraw (every 15 s with sub-second scrapes) in Chromium's
	// virtual time.
	redrawn := regexp.MustCompile(`data-refreshes="[1-9]`)
	detail := runChromiumUntil(t, chromium, d.base+"/slo?target=overloaded&model="+strings.ReplaceAll(sim.DemoModel, "/", "%2F")+"&slo=interactive&range=all",
		redrawn.MatchString, "--dump-dom", "--virtual-time-budget=20000")
	for _, want := range []string{`class="tiles"`, "attainment now", "error budget left", "time to exhaustion", `<h3>alert</h3>`} {
		if !strings.Contains(detail, want) {
			t.Errorf("the detail page lacks %q:\n%s", want, tail(detail, 2000))
		}
	}
	if !regexp.MustCompile(`<p class="big" data-state="(firing|pending|ok)">`).MatchString(detail) {
		t.Error("the detail page's alert tile shows no state")
	}
	if !redrawn.MatchString(detail) {
		t.Errorf("the detail page did not redraw itself within Chromium's virtual time, in three loads:\n%s", tail(detail, 1500))
	}
}
