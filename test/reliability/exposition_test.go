package reliability

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// withoutVLLM serves the victim's exposition without any vllm: family, as
// vLLM does with --disable-log-stats (or after an upgrade renamed them all).
func withoutVLLM(r *rig) behaviour {
	return func(w http.ResponseWriter, _ *http.Request) {
		body, ct := r.victimBody()
		var out []string
		for _, l := range strings.Split(string(body), "\n") {
			if strings.Contains(l, "vllm:") {
				continue
			}
			out = append(out, l)
		}
		w.Header().Set("Content-Type", ct)
		w.Write([]byte(strings.Join(out, "\n")))
	}
}

// TestFamiliesGone: a target whose exposition has no vllm: family is up (it
// answered) but says every family is missing, and publishes no model series
// at all: no made-up zero.
func TestFamiliesGone(t *testing.T) {
	r := newRig(t)
	profile := r.profile
	for range 3 {
		if err := r.step(withoutVLLM(r)); err != nil {
			t.Fatalf("scrape of a target without vllm families: %v", err)
		}
		all := r.check()
		for _, fs := range profile.Families {
			key := fmt.Sprintf("%starget_metric_missing{metric=%q,target=%q}", metricsPrefix, fs.Family, hostileName)
			v, present := all[key]
			if fs.Family.Optional() {
				// The newest servers' families are never reported missing.
				if present {
					t.Fatalf("%s = %v for an optional family, want no series", key, v)
				}
				continue
			}
			if v != 1 {
				t.Fatalf("%s = %v (present %v), want 1", key, v, present)
			}
		}
		for k := range only(all, hostileName) {
			if strings.Contains(k, "model_name=") && !strings.Contains(k, `model_name=""`) {
				t.Fatalf("series with a model although the target exposes no vllm family: %s", k)
			}
		}
	}
	// The families come back (vLLM restarted with stats on): missing turns 0.
	for range 2 {
		if err := r.step(r.good); err != nil {
			t.Fatal(err)
		}
	}
	all := r.check()
	key := fmt.Sprintf("%starget_metric_missing{metric=%q,target=%q}", metricsPrefix, scrape.E2E, hostileName)
	if v, ok := all[key]; !ok || v != 0 {
		t.Fatalf("%s = %v (present %v) once the family is back, want 0", key, v, ok)
	}
}

// TestFamiliesVanishMidRun: the families disappear after good scrapes. The
// target stays up, says the families are missing, and the history keeps only
// what was really scraped (the oracle comparison in rig.check).
func TestFamiliesVanishMidRun(t *testing.T) {
	r := newRig(t)
	for range 3 {
		if err := r.step(r.good); err != nil {
			t.Fatal(err)
		}
		r.check()
	}
	for range 6 {
		if err := r.step(withoutVLLM(r)); err != nil {
			t.Fatal(err)
		}
		all := r.check()
		key := fmt.Sprintf("%starget_metric_missing{metric=%q,target=%q}", metricsPrefix, scrape.TTFT, hostileName)
		if all[key] != 1 {
			t.Fatalf("%s = %v, want 1", key, all[key])
		}
		// No window may claim zero requests for a period nobody observed.
		if n, ok := modelSeries(all, "window_requests", `metric="e2e"`, `window="1m"`); ok && n == 0 {
			t.Fatalf("window_requests{e2e,1m} = 0 published for a minute in which the families were absent")
		}
	}
}

// TestCardinalityCap: a target that suddenly serves 10,000 model_name values
// keeps the models it had, adds models only up to the cap, counts every
// dropped model in models_dropped_total, and keeps serving the healthy
// target unchanged.
func TestCardinalityCap(t *testing.T) {
	r := newRig(t)
	for range 2 {
		if err := r.step(r.good); err != nil {
			t.Fatal(err)
		}
		r.check()
	}
	const flood = 10000
	var extra bytes.Buffer
	for m := range flood {
		fmt.Fprintf(&extra, "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m%05d\"} 1.0\n", m)
	}
	flooded := func(w http.ResponseWriter, _ *http.Request) {
		body, ct := r.victimBody()
		i := bytes.Index(body, []byte(successStop))
		w.Header().Set("Content-Type", ct)
		w.Write(body[:i])
		w.Write(extra.Bytes())
		w.Write(body[i:])
	}
	for n := 1; n <= 2; n++ {
		if err := r.step(flooded); err != nil {
			t.Fatalf("flooded scrape: %v", err)
		}
		all := r.check()
		// The history holds the model it had plus cap-1 new ones: no more.
		tr := r.hostileReport()
		if len(tr.Models) != rigMaxModels {
			t.Fatalf("%d models kept, want the cap %d", len(tr.Models), rigMaxModels)
		}
		kept := false
		for _, m := range tr.Models {
			kept = kept || m.Name == victimModel
		}
		if !kept {
			t.Fatalf("the model served before the flood was dropped")
		}
		dropped := all[fmt.Sprintf("%starget_models_dropped_total{target=%q}", metricsPrefix, hostileName)]
		if want := float64(n * (flood - (rigMaxModels - 1))); dropped != want {
			t.Fatalf("after %d floods models_dropped_total = %v, want %v", n, dropped, want)
		}
		if n, ok := modelSeries(all, "window_requests", `metric="e2e"`, `window="1m"`); !ok || n <= 0 {
			t.Fatalf("the kept model's window_requests = %v (present %v)", n, ok)
		}
	}
}

// TestClockStepsBack: the system clock jumps back a minute. Every scrape
// stamped before the newest point is refused and counted as out_of_order on
// both targets; the history and every published number stay as they were
// (the references never saw the refused scrapes); once the clock passes the
// newest point again, scrapes are accepted.
func TestClockStepsBack(t *testing.T) {
	r := newRig(t)
	r.allowHealthyErrors = true
	for range 4 {
		if err := r.step(r.good); err != nil {
			t.Fatal(err)
		}
		r.check()
	}
	newest := r.clock.Now()
	var msgs []string
	// Back 75s, then forward 15s at a time: 4 scrapes at or before the newest point.
	err := r.stepBy(-75*time.Second, r.good)
	for r.clock.Now().Compare(newest) <= 0 {
		if err == nil {
			t.Fatalf("scrape stamped %v accepted after one stamped %v", r.clock.Now(), newest)
		}
		msgs = append(msgs, err.Error())
		all := r.check()
		n := float64(len(msgs))
		for _, target := range []string{healthyName, hostileName} {
			key := fmt.Sprintf("%starget_scrape_failures_total{reason=%q,target=%q}", metricsPrefix, "out_of_order", target)
			if all[key] != n {
				t.Fatalf("%s = %v, want %v", key, all[key], n)
			}
		}
		err = r.step(r.good)
	}
	if err != nil {
		t.Fatalf("scrape after the clock passed the newest point again: %v", err)
	}
	r.check()
	if len(msgs) != 6 {
		t.Fatalf("%d refused scrapes, want 6 (back 75s, forward 15s at a time, up to and including the newest time)", len(msgs))
	}
	if msgs[0] != msgs[1] {
		t.Errorf("the out_of_order error names the refused time, so a clock step logs one line per scrape (cmd daemon.ingest dedupes on the text): %q vs %q", msgs[0], msgs[1])
	}
}
