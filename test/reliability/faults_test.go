package reliability

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// fault is one way the hostile target misbehaves.
type fault struct {
	name string
	// serve builds the behaviour; nil means the port refuses connections.
	serve func(r *rig) behaviour
	// reason is the failure reason the scrape must be counted under.
	reason string
}

// editLine replaces the value of the first sample line starting with prefix.
func editLine(body []byte, prefix, value string) []byte {
	lines := strings.Split(string(body), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			sp := strings.LastIndexByte(l, ' ')
			lines[i] = l[:sp+1] + value
			return []byte(strings.Join(lines, "\n"))
		}
	}
	panic("editLine: no line starts with " + prefix) // a broken test, not input
}

// edited serves the victim's exposition changed by edit.
func edited(edit func([]byte) []byte) func(r *rig) behaviour {
	return func(r *rig) behaviour {
		return func(w http.ResponseWriter, _ *http.Request) {
			body, ct := r.victimBody()
			w.Header().Set("Content-Type", ct)
			w.Write(edit(body))
		}
	}
}

const (
	successStop = `vllm:request_success_total{engine="0",finished_reason="stop"`
	e2eInf      = `vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf"`
	e2eSum      = `vllm:e2e_request_latency_seconds_sum{engine="0"`
)

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// faults are the transport and exposition faults a target can show, from a
// refused connection to a malformed body, each with the failure reason it
// must be counted under.
var faults = []fault{
	{name: "connection refused", serve: nil, reason: scrape.ReasonConnection},
	{name: "accepts and never answers", reason: scrape.ReasonTimeout, serve: func(r *rig) behaviour {
		return func(_ http.ResponseWriter, req *http.Request) { r.bad.hang(req) }
	}},
	{name: "drips the body slower than the timeout", reason: scrape.ReasonTimeout, serve: func(r *rig) behaviour {
		return func(w http.ResponseWriter, req *http.Request) {
			body, ct := r.victimBody()
			w.Header().Set("Content-Type", ct)
			for _, c := range body {
				if _, err := w.Write([]byte{c}); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-req.Context().Done():
					return
				case <-r.bad.done:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}},
	{name: "404", reason: scrape.ReasonHTTPStatus, serve: func(*rig) behaviour {
		return func(w http.ResponseWriter, req *http.Request) { http.NotFound(w, req) }
	}},
	{name: "500", reason: scrape.ReasonHTTPStatus, serve: func(*rig) behaviour {
		return func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "engine dead", http.StatusInternalServerError)
		}
	}},
	{name: "redirect loop", reason: scrape.ReasonConnection, serve: func(*rig) behaviour {
		return func(w http.ResponseWriter, req *http.Request) { http.Redirect(w, req, req.URL.Path, http.StatusFound) }
	}},
	{name: "body over the size limit", reason: scrape.ReasonBodyTooLarge, serve: func(*rig) behaviour {
		big := bytes.Repeat([]byte("# padding comment line\n"), 2*rigBodyLimit/23)
		return func(w http.ResponseWriter, _ *http.Request) { w.Write(big) }
	}},
	{name: "gzip bomb over the size limit", reason: scrape.ReasonBodyTooLarge, serve: func(*rig) behaviour {
		bomb := gzipped(bytes.Repeat([]byte("# x\n"), 4*rigBodyLimit/4))
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb)
		}
	}},
	{name: "not an exposition", reason: scrape.ReasonInvalidExposition, serve: func(*rig) behaviour {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html><body><h1>Welcome to nginx!</h1></body></html>\n"))
		}
	}},
	{name: "truncated mid-line", reason: scrape.ReasonInvalidExposition, serve: edited(func(b []byte) []byte {
		i := bytes.Index(b, []byte(e2eInf))
		return b[:i+len(`vllm:e2e_request_latency_seconds_bucket{engine="0",le="+I`)]
	})},
	{name: "connection closed mid-body", reason: scrape.ReasonRead, serve: func(r *rig) behaviour {
		return func(w http.ResponseWriter, _ *http.Request) {
			body, ct := r.victimBody()
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body[:len(body)/2])
			// Returning with fewer bytes than announced makes net/http close the connection.
		}
	}},
	{name: "gzip that lies (plain body)", reason: scrape.ReasonDecompress, serve: func(r *rig) behaviour {
		return func(w http.ResponseWriter, _ *http.Request) {
			body, ct := r.victimBody()
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(body)
		}
	}},
	{name: "gzip that lies (truncated stream)", reason: scrape.ReasonDecompress, serve: func(r *rig) behaviour {
		return func(w http.ResponseWriter, _ *http.Request) {
			body, ct := r.victimBody()
			z := gzipped(body)
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(z[:len(z)/2])
		}
	}},
	{name: "duplicate series", reason: scrape.ReasonDuplicateSeries, serve: edited(func(b []byte) []byte {
		i := bytes.Index(b, []byte(successStop))
		line := b[i : i+bytes.IndexByte(b[i:], '\n')+1]
		return append(append(append([]byte{}, b[:i]...), line...), b[i:]...)
	})},
	{name: "NaN counter", reason: scrape.ReasonInvalidValue, serve: edited(func(b []byte) []byte { return editLine(b, successStop, "NaN") })},
	{name: "negative counter", reason: scrape.ReasonInvalidValue, serve: edited(func(b []byte) []byte { return editLine(b, successStop, "-3") })},
	{name: "+Inf bucket count", reason: scrape.ReasonInvalidValue, serve: edited(func(b []byte) []byte { return editLine(b, e2eInf, "+Inf") })},
	{name: "NaN histogram sum", reason: scrape.ReasonInvalidValue, serve: edited(func(b []byte) []byte { return editLine(b, e2eSum, "NaN") })},
	{name: "negative histogram sum", reason: scrape.ReasonInvalidValue, serve: edited(func(b []byte) []byte {
		return editLine(editLine(b, e2eSum, "-1"), `vllm:e2e_request_latency_seconds_sum{engine="1"`, "-1")
	})},
}

// TestFaults drives every fault through the real scrape → pipeline →
// exporter path: two good scrapes, three faulty ones, two good ones. After
// every step (rig.check) our handler answers, the healthy target is
// unchanged, the hostile target's numbers are those of its good scrapes only,
// and target_up is right; after the faults the failure counter holds three
// under the right reason and nothing else.
func TestFaults(t *testing.T) {
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			var b behaviour
			if f.serve != nil {
				b = f.serve(r)
			}
			for range 2 {
				if err := r.step(r.good); err != nil {
					t.Fatalf("good scrape failed: %v", err)
				}
				r.check()
			}
			var msgs []string
			for i := range 3 {
				err := r.stepFault(b)
				if err == nil {
					t.Fatalf("faulty scrape %d succeeded", i)
				}
				msgs = append(msgs, err.Error())
				all := r.check()
				if got := failures(all, f.reason); got != float64(i+1) {
					t.Fatalf("after %d faults: failures{reason=%q} = %v, want %v (err: %v)", i+1, f.reason, got, i+1, err)
				}
				// The windows still hold the good scrapes' numbers, not zeros.
				if n, ok := modelSeries(all, "window_requests", `metric="e2e"`, `window="1m"`); !ok || n <= 0 {
					t.Fatalf("after %d faults: window_requests{e2e,1m} = %v (present %v): a failed scrape erased the window", i+1, n, ok)
				}
			}
			for range 2 {
				if err := r.step(r.good); err != nil {
					t.Fatalf("recovery scrape failed: %v", err)
				}
				all := r.check()
				if got := failures(all, f.reason); got != 3 {
					t.Fatalf("after recovery: failures{reason=%q} = %v, want 3", f.reason, got)
				}
			}
			// The daemon logs a target's error only when its text changes
			// (cmd daemon.ingest): a persisting fault must keep one text.
			for i := 1; i < len(msgs); i++ {
				if msgs[i] != msgs[0] {
					t.Fatalf("a persisting fault changes its message, so the daemon would log it every scrape:\n%q\n%q", msgs[0], msgs[i])
				}
			}
		})
	}
}
