package recording

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/scrape"
)

// fetchEntry scrapes url once as the record command does and returns the
// entry it would write.
func fetchEntry(t *testing.T, url string) Entry {
	t.Helper()
	f, err := scrape.NewFetcher("t", url, commoncfg.DefaultHTTPClientConfig, 5*time.Second, MaxLineBytes/4)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.Fetch(context.Background())
	e := Entry{Time: time.Now(), Target: "t", Status: resp.Status}
	if err != nil {
		e.Error = err.Error()
	} else {
		e.ContentType, e.Body = resp.ContentType, string(resp.Body)
	}
	return e
}

// TestOutcomeNamesTheCause records a 404 and a refused port: each outcome
// is an error that names its cause. One good scrape among failures is a
// usable recording.
func TestOutcomeNamesTheCause(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/metrics"
	ln.Close()
	for _, c := range []struct{ url, cause string }{
		{notFound.URL + "/metrics", "404"},
		{refused, "connection refused"},
	} {
		var o Outcome
		for range 3 {
			o.Add(fetchEntry(t, c.url))
		}
		err := o.Err()
		if err == nil || !strings.Contains(err.Error(), "all 3 scrapes failed") || !strings.Contains(err.Error(), c.cause) {
			t.Errorf("%s: outcome error %v, want all 3 failed naming %q", c.url, err, c.cause)
		}
	}
	var o Outcome
	o.Add(Entry{Error: "HTTP 503"})
	o.Add(Entry{Body: "vllm:x 1\n"})
	if err := o.Err(); err != nil {
		t.Errorf("one good scrape: %v", err)
	}
	if err := (Outcome{}).Err(); err == nil {
		t.Error("no error without scrapes")
	}
}
