package daemon

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// serveDay serves the demo's model under a rate profile at host:80.
func serveDay(t *testing.T, n *memNet, host string, phases []sim.Phase) *fakeTarget {
	t.Helper()
	cfg := sim.DemoConfig(3, time.Now())
	cfg.DiscardTokenTimes = true
	cfg.Models[0].Engines = 1
	cfg.Models[0].Workload.Phases, cfg.Models[0].Workload.Repeat = phases, false
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ft := &fakeTarget{host: host}
	h := s.Handler(time.Now)
	ft.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Accept-Encoding")
		h.ServeHTTP(w, r)
	})}
	go ft.srv.Serve(n.listen(host + ":80"))
	t.Cleanup(func() { ft.srv.Close() })
	return ft
}

// TestHeadroomTicket runs the daemon against a server whose load rises
// past its knee (about 6 req/s for TTFT ≤ 500 ms and TPOT ≤ 50 ms at 95%)
// to 17% above it: the capacity becomes bounded, and once the upper end of
// its headroom has stayed below the 20% margin for the five-minute hold,
// VLLMSLOCapacityHeadroomLow fires as a ticket in /metrics with the
// target, model and SLO; never while the headroom is not below the
// margin, and never before the hold.
func TestHeadroomTicket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ft := serveDay(t, n, "gpu0", []sim.Phase{
			{Duration: 45 * time.Minute, Kind: sim.Ramp, Rate: 2, RateEnd: 7},
			{Duration: 20 * time.Minute, Kind: sim.Poisson, Rate: 7},
			{Duration: 70 * time.Minute, Kind: sim.Poisson, Rate: 5.7},
		})
		cfg := `global:
  scrape_interval: 15s
  scrape_timeout: 10s
  evaluation_interval: 15s
  state_save_interval: 1h
  windows: [1m, 5m]
targets:
  - name: gpu0
    url: ` + ft.url() + `
slos:
  - name: interactive
    objectives: {ttft: 500ms, tpot: 50ms}
    goal: 0.95
    period: 1d
capacity:
  headroom_margin: 0.2
  headroom_for: 5m
`
		r := startRig(t, n, cfg)
		firing := regexp.MustCompile(`(?m)^vllm_slo_alert_firing\{alertname="VLLMSLOCapacityHeadroomLow",model_name="[^"]+",severity="ticket",slo="interactive",target="gpu0"\} (\d)$`)
		upper := regexp.MustCompile(`(?m)^vllm_slo_capacity_headroom_upper_ratio\{kind="bounded",[^}]*\} (\S+)$`)
		var lowSince time.Time
		for range 26 {
			advance(5 * time.Minute)
			_, body := r.do("GET", "/metrics")
			u := upper.FindStringSubmatch(body)
			low := false
			if u != nil {
				v, err := strconv.ParseFloat(u[1], 64)
				low = err == nil && v < 0.2
			}
			if low && lowSince.IsZero() {
				lowSince = time.Now()
			}
			if !low {
				lowSince = time.Time{}
			}
			m := firing.FindStringSubmatch(body)
			if m != nil && !low {
				t.Fatalf("the ticket is active while the headroom's upper end is not below 0.2:\n%s", grep(body, "capacity_headroom"))
			}
			if m != nil && m[1] == "1" {
				if time.Since(lowSince) < 5*time.Minute {
					t.Fatalf("the ticket fires %v after the headroom fell below the margin, before its 5m hold", time.Since(lowSince))
				}
				t.Logf("fired at %v, the headroom's upper end %s since %v", time.Now().Format("15:04"), u[1], lowSince.Format("15:04"))
				oneReport(t, r)
				if err := r.stop(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		_, body := r.do("GET", "/metrics")
		t.Fatalf("no ticket after the load settled at 95%% of the knee (low since %v):\n%s", lowSince, grep(body, "capacity"))
	})
}

// oneReport checks that the capacity estimates and the headroom ticket
// leave by the one report: the report holds the estimates and the ticket
// among its alerts, and the daemon's own registry (the other gatherer of
// /metrics) holds no capacity series.
func oneReport(t *testing.T, r *rig) {
	t.Helper()
	rep := r.report()
	if len(rep.Capacity) == 0 {
		t.Fatal("/metrics shows capacity series the report does not hold")
	}
	ticket := false
	for _, a := range rep.Alerts {
		ticket = ticket || a.Name() == "VLLMSLOCapacityHeadroomLow"
	}
	if !ticket {
		t.Fatalf("the headroom ticket fires in /metrics but is not among the report's alerts: %+v", rep.Alerts)
	}
	mfs, err := r.d.self.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "vllm_slo_capacity_") {
			t.Fatalf("%s is gathered from the daemon's own registry, not from the report", mf.GetName())
		}
	}
}
