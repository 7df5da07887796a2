package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
)

var start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// fakeAlertmanager is an in-memory Alertmanager: its client's transport
// decodes the posts to the v2 API without a socket, so the tests run inside
// a synctest bubble.
type fakeAlertmanager struct {
	mu     sync.Mutex
	posts  [][]amAlert
	status int           // answered instead of 200 when set
	hang   chan struct{} // when set, every post waits for it or its context
}

func (f *fakeAlertmanager) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != "/api/v2/alerts" || r.Method != http.MethodPost {
		return respond(http.StatusNotFound), nil
	}
	if f.hang != nil {
		select {
		case <-f.hang:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	var batch []amAlert
	if err := json.NewDecoder(r.Body).Decode(&batch); err != nil {
		return respond(http.StatusBadRequest), nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status != 0 {
		return respond(f.status), nil
	}
	f.posts = append(f.posts, batch)
	return respond(http.StatusOK), nil
}

func respond(code int) *http.Response {
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Body: io.NopCloser(bytes.NewReader(nil)), Header: http.Header{}}
}

func (f *fakeAlertmanager) target(name string) Alertmanager {
	return Alertmanager{URL: "http://" + name + ":9093", Client: &http.Client{Transport: f}, Timeout: time.Second}
}

func (f *fakeAlertmanager) received() [][]amAlert {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]amAlert(nil), f.posts...)
}

// running starts n.Run in the bubble and stops it when the test ends.
func running(t *testing.T, n *Notifier) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		n.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func TestNotifierFiringResendResolve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		am := &fakeAlertmanager{}
		n := New(Config{
			Alertmanagers:  []Alertmanager{am.target("am")},
			ResendDelay:    time.Minute,
			ExternalLabels: map[string]string{"cluster": "lab", "severity": "ignored"},
		}, nil, nil)
		running(t, n)

		labels := map[string]string{"alertname": "VLLMSLOBurnRateHigh", "severity": "page", "slo": "interactive"}
		fire := pipeline.Alert{Labels: labels, State: pipeline.StateFiring, ActiveAt: start, FiredAt: start}
		n.Notify(start, []pipeline.Alert{fire, {Labels: map[string]string{"alertname": "p"}, State: pipeline.StatePending}})
		synctest.Wait()
		if len(am.received()) != 1 {
			t.Fatalf("%d posts after the first firing, want 1", len(am.received()))
		}
		got := am.received()[0]
		if len(got) != 1 || got[0].Labels["cluster"] != "lab" || got[0].Labels["severity"] != "page" || !got[0].StartsAt.Equal(start) || !got[0].EndsAt.After(start) {
			t.Fatalf("first post %+v: want only the firing alert, external labels added but not overriding, endsAt in the future", got)
		}
		n.Notify(start.Add(30*time.Second), []pipeline.Alert{fire}) // within ResendDelay: nothing
		synctest.Wait()
		if len(am.received()) != 1 {
			t.Fatalf("%d posts after a notify within the resend delay, want 1", len(am.received()))
		}
		n.Notify(start.Add(61*time.Second), []pipeline.Alert{fire}) // resent
		synctest.Wait()
		if len(am.received()) != 2 {
			t.Fatalf("%d posts after the resend delay, want 2", len(am.received()))
		}
		resolved := fire
		resolved.State, resolved.ResolvedAt = pipeline.StateResolved, start.Add(90*time.Second)
		n.Notify(start.Add(90*time.Second), []pipeline.Alert{resolved})
		synctest.Wait()
		posts := am.received()
		if len(posts) != 3 {
			t.Fatalf("%d posts after the resolve, want 3", len(posts))
		}
		if r := posts[2][0]; !r.EndsAt.Equal(resolved.ResolvedAt) {
			t.Errorf("resolve endsAt %v, want %v", r.EndsAt, resolved.ResolvedAt)
		}
	})
}

// TestNotifierNeverBlocks checks that an Alertmanager that hangs does not
// block Notify, which runs on the evaluation path: the batches that cannot be
// sent replace one another and are counted as dropped.
func TestNotifierNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		am := &fakeAlertmanager{hang: make(chan struct{})}
		metrics := NewMetrics(nil)
		n := New(Config{Alertmanagers: []Alertmanager{am.target("am")}}, nil, metrics)
		running(t, n)
		for i := 0; i < 100; i++ {
			a := pipeline.Alert{Labels: map[string]string{"alertname": "x", "i": string(rune('a' + i%26))}, State: pipeline.StateFiring}
			n.Notify(start.Add(time.Duration(i)*time.Hour), []pipeline.Alert{a})
			if i == 0 {
				synctest.Wait() // the first batch is in flight, held by the Alertmanager
			}
		}
		// Reaching this line is the test: 99 calls returned while the
		// Alertmanager held the first post. One batch is queued, the rest
		// were dropped.
		synctest.Wait()
		if got := testutil.ToFloat64(metrics.dropped); got != 98 {
			t.Errorf("dropped %v batches, want 98 (one in flight, one queued)", got)
		}
		close(am.hang)
	})
}

// TestNotifierSendsRefiredAlertAtOnce: an alert that resolves and fires again
// within the resend delay is a new instance, sent at once.
func TestNotifierSendsRefiredAlertAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		am := &fakeAlertmanager{}
		n := New(Config{Alertmanagers: []Alertmanager{am.target("am")}, ResendDelay: 5 * time.Minute}, nil, nil)
		running(t, n)
		labels := map[string]string{"alertname": "x"}
		n.Notify(start, []pipeline.Alert{{Labels: labels, State: pipeline.StateFiring, ActiveAt: start}})
		synctest.Wait()
		n.Notify(start.Add(time.Minute), []pipeline.Alert{{Labels: labels, State: pipeline.StateResolved, ActiveAt: start, ResolvedAt: start.Add(time.Minute)}})
		synctest.Wait()
		again := start.Add(3 * time.Minute)
		n.Notify(again, []pipeline.Alert{{Labels: labels, State: pipeline.StateFiring, ActiveAt: again}})
		synctest.Wait()
		if got := len(am.received()); got != 3 {
			t.Errorf("%d posts (firing, resolved, firing again), want 3", got)
		}
	})
}

// TestApplyConfigKeepsWhatWasSent: a reload that changes the notifier's
// configuration does not re-send a still-firing alert before its resend
// delay, and later posts go to the new Alertmanagers only.
func TestApplyConfigKeepsWhatWasSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first, second := &fakeAlertmanager{}, &fakeAlertmanager{}
		cfg := Config{Alertmanagers: []Alertmanager{first.target("first")}, ResendDelay: time.Minute}
		n := New(cfg, nil, nil)
		running(t, n)
		fire := pipeline.Alert{Labels: map[string]string{"alertname": "x"}, State: pipeline.StateFiring, ActiveAt: start}
		n.Notify(start, []pipeline.Alert{fire})
		synctest.Wait()

		cfg.Alertmanagers = []Alertmanager{second.target("second")}
		cfg.ExternalLabels = map[string]string{"cluster": "lab"}
		n.ApplyConfig(cfg)
		n.Notify(start.Add(10*time.Second), []pipeline.Alert{fire})
		synctest.Wait()
		if len(first.received()) != 1 || len(second.received()) != 0 {
			t.Fatalf("posts first %d, second %d after a reload within the resend delay, want 1 and 0", len(first.received()), len(second.received()))
		}
		n.Notify(start.Add(61*time.Second), []pipeline.Alert{fire})
		synctest.Wait()
		posts := second.received()
		if len(first.received()) != 1 || len(posts) != 1 {
			t.Fatalf("posts first %d, second %d after the resend delay, want 1 and 1", len(first.received()), len(posts))
		}
		if posts[0][0].Labels["cluster"] != "lab" {
			t.Errorf("resent alert %v lacks the new external label", posts[0][0].Labels)
		}
	})
}

// TestNoAlertmanagerSendsNothing: without Alertmanagers nothing is due and
// nothing is remembered, so Alertmanagers added later get the firing alerts
// at once.
func TestNoAlertmanagerSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New(Config{ResendDelay: time.Hour}, nil, nil)
		running(t, n)
		fire := pipeline.Alert{Labels: map[string]string{"alertname": "x"}, State: pipeline.StateFiring, ActiveAt: start}
		n.Notify(start, []pipeline.Alert{fire})
		am := &fakeAlertmanager{}
		n.ApplyConfig(Config{Alertmanagers: []Alertmanager{am.target("am")}, ResendDelay: time.Hour})
		n.Notify(start.Add(time.Second), []pipeline.Alert{fire})
		synctest.Wait()
		if got := len(am.received()); got != 1 {
			t.Errorf("%d posts to an Alertmanager added after the alert fired, want 1", got)
		}
	})
}

// TestFailedPostIsCounted: an Alertmanager answering 500 is retried, then
// counted as an error, never as sent.
func TestFailedPostIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		am := &fakeAlertmanager{status: http.StatusInternalServerError}
		metrics := NewMetrics(nil)
		n := New(Config{Alertmanagers: []Alertmanager{am.target("am")}}, nil, metrics)
		running(t, n)
		n.Notify(start, []pipeline.Alert{{Labels: map[string]string{"alertname": "x"}, State: pipeline.StateFiring, ActiveAt: start}})
		<-time.After(time.Minute) // virtual time: past the three attempts' backoff (1 s + 2 s)
		synctest.Wait()
		name := am.target("am").URL
		if e, s := testutil.ToFloat64(metrics.errors.WithLabelValues(name)), testutil.ToFloat64(metrics.sent.WithLabelValues(name)); e != 1 || s != 0 {
			t.Errorf("errors %v, sent %v after a failing Alertmanager, want 1 and 0", e, s)
		}
	})
}

// burn is a burn-rate alert of target in a state at now (the resolve time
// for a resolved one).
func burn(target string, state pipeline.AlertState, active, now time.Time) pipeline.Alert {
	a := pipeline.Alert{Target: target, State: state, ActiveAt: active,
		Labels:      map[string]string{"alertname": pipeline.AlertBurnRate, "severity": "page", "slo": "interactive", "model_name": "m"},
		Annotations: map[string]string{"target": target}}
	if state == pipeline.StateResolved {
		a.ResolvedAt = now
	}
	return a
}

// TestBreachResolvesWhenNoTargetFires: two targets serving one model fire
// the same burn-rate alert (no target label). When one recovers, nothing
// resolved is posted while the other fires; when that one recovers too,
// one resolve goes out, and it is re-sent no more often than the firing
// alert was, and only until the last firing post has expired.
func TestBreachResolvesWhenNoTargetFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		am := &fakeAlertmanager{}
		resend := 30 * time.Second
		n := New(Config{Alertmanagers: []Alertmanager{am.target("am")}, ResendDelay: resend}, nil, nil)
		running(t, n)
		aUp, bUp := start.Add(-time.Minute), start.Add(-30*time.Second)
		aDown, bDown := start.Add(2*time.Minute), start.Add(5*time.Minute)
		var sentAt []time.Time
		var lastResolve time.Time
		for at := start; at.Before(start.Add(15 * time.Minute)); at = at.Add(5 * time.Second) {
			a, b := burn("a", pipeline.StateFiring, aUp, at), burn("b", pipeline.StateFiring, bUp, at)
			if !at.Before(aDown) {
				a = burn("a", pipeline.StateResolved, aUp, aDown)
			}
			if !at.Before(bDown) {
				b = burn("b", pipeline.StateResolved, bUp, bDown)
			}
			before := len(am.received())
			n.Notify(at, []pipeline.Alert{a, b})
			synctest.Wait()
			posts := am.received()
			for _, batch := range posts[before:] {
				sentAt = append(sentAt, at)
				if len(batch) != 1 {
					t.Fatalf("at %v a post of %d alerts, want one per breach: %+v", at.Sub(start), len(batch), batch)
				}
				got := batch[0]
				resolved := !got.EndsAt.After(at)
				switch {
				case resolved && at.Before(bDown):
					t.Errorf("at %v the breach was posted resolved while target b still fires", at.Sub(start))
				case resolved && !lastResolve.IsZero() && at.Sub(lastResolve) < resend:
					t.Errorf("resolves at %v and %v, less than the resend delay apart", lastResolve.Sub(start), at.Sub(start))
				case resolved && !got.EndsAt.Equal(bDown):
					t.Errorf("resolve ends at %v, want when the last target recovered (%v)", got.EndsAt.Sub(start), bDown.Sub(start))
				case !resolved && !got.StartsAt.Equal(aUp):
					t.Errorf("firing post starts at %v, want the first target's %v", got.StartsAt.Sub(start), aUp.Sub(start))
				case !resolved && at.Before(aDown) && got.Annotations["targets"] != "a, b":
					t.Errorf("firing post names targets %q, want both", got.Annotations["targets"])
				case !resolved && !at.Before(aDown) && got.Annotations["targets"] != "b":
					t.Errorf("firing post after a recovered names targets %q, want b", got.Annotations["targets"])
				}
				if resolved {
					lastResolve = at
				}
			}
		}
		if len(sentAt) == 0 || lastResolve.IsZero() {
			t.Fatalf("posts at %v: no resolve after both targets recovered", sentAt)
		}
		// Resolves stop once the last firing post (at most a resend delay
		// before b recovered) has expired: 4 × max(resend, 1m) after it.
		if limit := bDown.Add(4 * time.Minute); lastResolve.After(limit) {
			t.Errorf("resolve re-sent at %v, after the firing alert expired in Alertmanager (%v)", lastResolve.Sub(start), limit.Sub(start))
		}
		if first := sentAt[slices.IndexFunc(sentAt, func(t time.Time) bool { return !t.Before(bDown) })]; !first.Equal(bDown) {
			t.Errorf("first resolve at %v, want at once when the last target recovered (%v)", first.Sub(start), bDown.Sub(start))
		}
	})
}

// TestResolveStormIsThrottled: a source that flaps every evaluation (a
// reload storm retiring and reviving a target whose alert fires at once)
// posts at most one resolve per resend delay; the firing posts that
// interleave keep Alertmanager's alert open.
func TestResolveStormIsThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		am := &fakeAlertmanager{}
		resend := 10 * time.Second
		n := New(Config{Alertmanagers: []Alertmanager{am.target("am")}, ResendDelay: resend}, nil, nil)
		running(t, n)
		var resolves []time.Time
		for i := range 200 {
			at := start.Add(time.Duration(i) * 100 * time.Millisecond)
			state := pipeline.StateFiring
			if i%2 == 1 {
				state = pipeline.StateResolved
			}
			before := len(am.received())
			n.Notify(at, []pipeline.Alert{burn("a", state, at, at)})
			synctest.Wait()
			for _, batch := range am.received()[before:] {
				for _, a := range batch {
					if !a.EndsAt.After(at) {
						resolves = append(resolves, at)
					}
				}
			}
		}
		for i := 1; i < len(resolves); i++ {
			if d := resolves[i].Sub(resolves[i-1]); d < resend {
				t.Errorf("resolves %v apart in a storm, want at least the resend delay %v", d, resend)
			}
		}
		if len(resolves) == 0 || len(resolves) > 2 {
			t.Errorf("%d resolves over 20 s of flapping with a 10 s resend delay, want 1 or 2", len(resolves))
		}
	})
}

// TestPerTargetAlerts: with PerTarget each target's burn-rate alert is its
// own Alertmanager alert, labelled with the target, and one target's
// resolve is posted while the other still fires.
func TestPerTargetAlerts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		am := &fakeAlertmanager{}
		n := New(Config{Alertmanagers: []Alertmanager{am.target("am")}, ResendDelay: time.Minute, PerTarget: true}, nil, nil)
		running(t, n)
		n.Notify(start, []pipeline.Alert{burn("a", pipeline.StateFiring, start, start), burn("b", pipeline.StateFiring, start, start)})
		synctest.Wait()
		later := start.Add(15 * time.Second)
		n.Notify(later, []pipeline.Alert{burn("a", pipeline.StateResolved, start, later), burn("b", pipeline.StateFiring, start, later)})
		synctest.Wait()
		posts := am.received()
		if len(posts) != 2 || len(posts[0]) != 2 || len(posts[1]) != 1 {
			t.Fatalf("posts %+v: want both targets firing, then a's resolve alone", posts)
		}
		if posts[0][0].Labels["target"] != "a" || posts[0][1].Labels["target"] != "b" {
			t.Errorf("per-target alerts labelled %v and %v, want targets a and b", posts[0][0].Labels, posts[0][1].Labels)
		}
		if r := posts[1][0]; r.Labels["target"] != "a" || r.EndsAt.After(later) {
			t.Errorf("second post %+v, want a's resolve", r)
		}
	})
}

// TestHeldResolveIsSentWhenSourcesLeave: a resolve held back by the resend
// delay is still sent once the delay has passed, even when the breach's
// source has left the report meanwhile (its alert pending again, or its
// target gone), and then the breach is forgotten.
func TestHeldResolveIsSentWhenSourcesLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		am := &fakeAlertmanager{}
		resend := 10 * time.Second
		n := New(Config{Alertmanagers: []Alertmanager{am.target("am")}, ResendDelay: resend}, nil, nil)
		running(t, n)
		steps := []struct {
			at    time.Duration
			state pipeline.AlertState // "" : no alert in the report
		}{
			{0, pipeline.StateFiring},
			{time.Second, pipeline.StateResolved}, // sent at once
			{2 * time.Second, pipeline.StateFiring},
			{3 * time.Second, pipeline.StateResolved}, // held: within the resend delay
			{4 * time.Second, pipeline.StatePending},  // the source left
			{5 * time.Second, ""},
			{12 * time.Second, ""}, // due: sent
			{30 * time.Second, ""}, // forgotten: nothing
		}
		var resolves []time.Duration
		for _, s := range steps {
			at := start.Add(s.at)
			var alerts []pipeline.Alert
			if s.state != "" {
				alerts = append(alerts, burn("a", s.state, start, at))
			}
			before := len(am.received())
			n.Notify(at, alerts)
			synctest.Wait()
			for _, batch := range am.received()[before:] {
				for _, a := range batch {
					if !a.EndsAt.After(at) {
						resolves = append(resolves, s.at)
						if s.at == 12*time.Second && !a.EndsAt.Equal(start.Add(3*time.Second)) {
							t.Errorf("held resolve ends at %v, want when the breach stopped firing (3s)", a.EndsAt.Sub(start))
						}
					}
				}
			}
		}
		if want := []time.Duration{time.Second, 12 * time.Second}; !slices.Equal(resolves, want) {
			t.Errorf("resolves posted at %v, want %v", resolves, want)
		}
	})
}
