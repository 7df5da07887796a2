package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"gopkg.in/yaml.v3"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/bench"
)

// TestPagesByTarget splits a fleet's scrape after its history into the
// targets' pages: each page parses as the text format and holds exactly
// its own server's series, without timestamps, and none of the recorded
// series.
func TestPagesByTarget(t *testing.T) {
	f := bench.Fleet{Targets: 3, Models: 2, History: 2 * time.Minute, End: bench.Epoch.Add(time.Hour), Rate: 2, Seed: 1, Ahead: bench.Interval}
	var body []byte
	if _, err := f.WriteImportLive(bench.LiveImport{History: nopWriteCloser{io.Discard}, Scrape: func(_ time.Time, b []byte) error {
		body = append([]byte(nil), b...)
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	pages, err := pagesByTarget(body, f.Targets)
	if err != nil {
		t.Fatal(err)
	}
	perServer := map[string]int{}
	for _, ls := range f.Series() {
		if inst := ls.Get("instance"); inst != "" {
			perServer[inst]++
		}
	}
	for i, page := range pages {
		inst := fmt.Sprintf("t%d", i)
		n := 0
		p, err := textparse.New(page, "text/plain", labels.NewSymbolTable(), textparse.ParserOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			e, err := p.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("target %d: %v\n%s", i, err, page)
			}
			if e != textparse.EntrySeries {
				continue
			}
			_, ts, _ := p.Series()
			var ls labels.Labels
			p.Labels(&ls)
			if ts != nil || ls.Get("instance") != inst {
				t.Fatalf("target %d: series %s with timestamp %v", i, ls, ts)
			}
			n++
		}
		if n == 0 || n != perServer[inst] {
			t.Fatalf("target %d: %d series, want %d", i, n, perServer[inst])
		}
	}
	for _, bad := range []string{`x{instance="t9"} 1 5` + "\n", `x{instance="tq"} 1 5` + "\n", `x{instance="t1"}` + "\n"} {
		if _, err := pagesByTarget([]byte(bad), f.Targets); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestLiveTargetsServe checks the targets' HTTP answers: a target's page,
// 503 before its first scrape, 404 for what is no target.
func TestLiveTargetsServe(t *testing.T) {
	lt := &liveTargets{pages: [][]byte{[]byte("a 1\n"), nil}}
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/t/0/metrics", http.StatusOK, "a 1\n"},
		{"/t/1/metrics", http.StatusServiceUnavailable, ""},
		{"/t/2/metrics", http.StatusNotFound, ""},
		{"/t/-1/metrics", http.StatusNotFound, ""},
		{"/t/0/other", http.StatusNotFound, ""},
		{"/metrics", http.StatusNotFound, ""},
	} {
		rec := httptest.NewRecorder()
		lt.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != tc.code || tc.body != "" && rec.Body.String() != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.path, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
	if err := lt.publish([]byte(`b{instance="t1",job="vllm"} 2 1000` + "\n")); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	lt.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/t/1/metrics", nil))
	if got := rec.Body.String(); rec.Code != http.StatusOK || !strings.HasPrefix(got, `b{instance="t1",job="vllm"} 2`+"\n") {
		t.Errorf("after publishing: %d %q", rec.Code, got)
	}
	if string(lt.pages[0]) != "a 1\n" {
		t.Errorf("publishing target 1 changed target 0's page to %q", lt.pages[0])
	}
}

// TestScrapeConfigMatchesPages is where the scrape configuration meets the
// fleet's labels: every configured target, fetched at its address and
// path once the walk has published it, serves only series whose instance
// label is the one the configuration gives the target (what honor_labels
// keeps), and every server of the fleet has one target.
func TestScrapeConfigMatchesPages(t *testing.T) {
	f := bench.Fleet{Targets: 3, Models: 2, History: 2 * time.Minute, End: time.Now().Truncate(bench.Interval).Add(-time.Minute),
		Rate: 2, Seed: 1, Ahead: 3 * time.Minute, Phased: true}
	lt, err := startLiveTargets(f)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			HonorLabels   bool `yaml:"honor_labels"`
			StaticConfigs []struct {
				Targets []string          `yaml:"targets"`
				Labels  map[string]string `yaml:"labels"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(lt.scrapeConfig()), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, lt.scrapeConfig())
	}
	if len(cfg.ScrapeConfigs) != 1 || !cfg.ScrapeConfigs[0].HonorLabels {
		t.Fatalf("scrape configs %+v, want one with honor_labels", cfg.ScrapeConfigs)
	}
	want := map[string]bool{}
	for _, ls := range f.Series() {
		if inst := ls.Get("instance"); inst != "" {
			want[inst] = true
		}
	}
	for _, sc := range cfg.ScrapeConfigs[0].StaticConfigs {
		inst := sc.Labels["instance"]
		if !want[inst] || len(sc.Targets) != 1 {
			t.Fatalf("target %+v: instance %q is no server of the fleet's", sc, inst)
		}
		delete(want, inst)
		page := fetchPage(t, "http://"+sc.Targets[0]+sc.Labels["__metrics_path__"])
		for line := range strings.Lines(page) {
			if !strings.Contains(line, `instance="`+inst+`"`) {
				t.Fatalf("target %s serves %q", inst, line)
			}
		}
	}
	if len(want) > 0 {
		t.Fatalf("servers without a target: %v", want)
	}
	if err := lt.stop(); err != nil {
		t.Fatal(err)
	}
}

// fetchPage waits until u answers 200 (a target answers 503 before the
// walk reaches its first scrape) and returns the body.
func fetchPage(t *testing.T, u string) string {
	t.Helper()
	for tries := 0; ; tries++ {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK && len(body) > 0 {
			return string(body)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || tries > 1000 {
			t.Fatalf("%s: %s %q", u, resp.Status, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
