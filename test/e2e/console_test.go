package e2e

import (
	"context"
	"encoding/json"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/sim"
)

// chromiumPath returns Debian's Chromium, skipping the test without it
// (failing in CI, where it must be installed).
func chromiumPath(t *testing.T) string {
	t.Helper()
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required in CI: %v", err)
		}
		t.Skipf("chromium not installed: %v", err)
	}
	return chromium
}

// runChromium runs headless Chromium on a page with the given extra flags,
// letting the page's scripts and data requests finish first, and returns
// its standard output.
func runChromium(t *testing.T, chromium, page string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + filepath.Join(t.TempDir(), "chromium"), "--virtual-time-budget=10000"}, flags...)
	cmd := exec.CommandContext(ctx, chromium, append(args, page)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", page, err, tail(stderr.String(), 2000))
	}
	return string(out)
}

// runChromiumUntil is runChromium, repeated up to three times until done
// holds for the page's output: on a starved runner a page's data requests
// can outlast Chromium's virtual-time budget, so one load that has not
// finished drawing says little, and three that have not say the page does
// not draw. It returns the last load's output.
func runChromiumUntil(t *testing.T, chromium, page string, done func(out string) bool, flags ...string) string {
	t.Helper()
	var out string
	for range 3 {
		if out = runChromium(t, chromium, page, flags...); done(out) {
			break
		}
	}
	return out
}

// chartBand is a band of the series JSON the detail page draws.
type chartBand struct {
	Estimate []*float64 `json:"estimate"`
	Lower    []*float64 `json:"lower"`
	Upper    []*float64 `json:"upper"`
}

// consoleSeries is the part of the series JSON the test checks.
type consoleSeries struct {
	Times  []float64 `json:"times"`
	Budget chartBand `json:"budget"`
	Burns  []struct {
		Long      chartBand `json:"long_burn"`
		Short     chartBand `json:"short_burn"`
		LongName  string    `json:"long"`
		ShortName string    `json:"short"`
	} `json:"burns"`
	Attainment []struct {
		Name string `json:"name"`
		chartBand
	} `json:"attainment"`
	Latency []struct {
		Metric   string  `json:"metric"`
		Quantile float64 `json:"quantile"`
		chartBand
	} `json:"latency"`
	Goodput    chartBand `json:"goodput"`
	Abandoned  chartBand `json:"abandoned"`
	Histograms []struct {
		Metric    string `json:"metric"`
		Quantiles []struct {
			Estimate, Lower, Upper *float64
		} `json:"quantiles"`
	} `json:"histograms"`
}

// bandHolds checks one band: one value per time, and every estimate inside
// its bounds with no tolerance (a null upper bound is +Inf). It returns the
// number of estimates drawn.
func bandHolds(t *testing.T, name string, b chartBand, n int) int {
	t.Helper()
	if len(b.Estimate) != n || len(b.Lower) != n || len(b.Upper) != n {
		t.Errorf("%s: %d/%d/%d values for %d times", name, len(b.Estimate), len(b.Lower), len(b.Upper), n)
		return 0
	}
	drawn := 0
	for i := range n {
		e := b.Estimate[i]
		if e == nil {
			continue
		}
		drawn++
		if b.Lower[i] == nil || *b.Lower[i] > *e || (b.Upper[i] != nil && *e > *b.Upper[i]) {
			t.Errorf("%s point %d: estimate %v leaves its band [%v, %v]", name, i, *e, b.Lower[i], b.Upper[i])
		}
	}
	return drawn
}

var (
	figureTag = regexp.MustCompile(`<figure class="chart"[^>]*>`)
	attrOf    = func(tag, name string) string {
		m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(tag)
		if m == nil {
			return ""
		}
		return m[1]
	}
)

// TestConsoleChromium runs the daemon over a simulator that is overloaded
// from the start, with a model name built to break HTML, and drives headless
// Chromium over the console: the overview and the detail view render (and
// are photographed), every chart draws data, every band drawn holds its
// estimate, and the model name stays text. E2E_SCREENSHOTS=DIR keeps the
// pictures.
func TestConsoleChromium(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	const evil = "<script>alert(1)</script>"
	s := startSim(t, func(c *sim.Config) {
		c.Models[0].Name = evil
		c.Models[0].Workload.Phases = []sim.Phase{{Kind: sim.Poisson, Rate: 4 * sim.DemoRate}}
	})
	d := startDaemon(t, t.TempDir(), liveConfig("0.99", [][2]string{{"console-target", s.url()}}, ""))
	waitFor(t, 20*time.Second, "a 5s window of the overloaded model", func() bool {
		return len(d.metrics(t).find("vllm_slo_attainment_ratio", map[string]string{"model_name": evil, "window": "5s"})) > 0
	})
	q := url.Values{"target": {"console-target"}, "model": {evil}, "slo": {"interactive"}, "range": {"all"}, "window": {"2s"}}.Encode()

	// The JSON the page draws: bands hold their estimates. It is read once
	// it has three points and the histograms' charts (a starved runner can
	// take longer than the 5s window to get there), so that the page, loaded
	// later, draws the same charts.
	var series consoleSeries
	var body string
	waitFor(t, 30*time.Second, "series JSON with three points and histograms", func() bool {
		var code int
		code, body = get(t, nil, d.base+"/api/series?"+q)
		if code != http.StatusOK {
			t.Fatalf("series: %d %s", code, body)
		}
		series = consoleSeries{}
		if err := json.Unmarshal([]byte(body), &series); err != nil {
			t.Fatalf("series: %v", err)
		}
		return len(series.Times) >= 3 && len(series.Histograms) > 0
	})
	if strings.Contains(body, "<script") {
		t.Error("series JSON carries the model name unescaped")
	}
	n := len(series.Times)
	if bandHolds(t, "budget", series.Budget, n) == 0 {
		t.Error("no budget drawn")
	}
	for _, b := range series.Burns {
		bandHolds(t, "burn "+b.LongName, b.Long, n)
		bandHolds(t, "burn "+b.ShortName, b.Short, n)
	}
	for _, a := range series.Attainment {
		if bandHolds(t, "attainment "+a.Name, a.chartBand, n) == 0 {
			t.Errorf("attainment %s never drawn", a.Name)
		}
	}
	for _, l := range series.Latency {
		bandHolds(t, "latency "+l.Metric+" "+strconv.FormatFloat(l.Quantile, 'g', -1, 64), l.chartBand, n)
	}
	bandHolds(t, "goodput", series.Goodput, n)
	bandHolds(t, "abandoned", series.Abandoned, n)
	for _, h := range series.Histograms {
		for _, m := range h.Quantiles {
			if m.Estimate != nil && (m.Lower == nil || *m.Lower > *m.Estimate || (m.Upper != nil && *m.Estimate > *m.Upper)) {
				t.Errorf("histogram %s: estimate %v outside [%v, %v]", h.Metric, *m.Estimate, m.Lower, m.Upper)
			}
		}
	}

	// The detail view after its scripts ran: every chart drew data and found
	// no estimate outside its band.
	detail := d.base + "/slo?" + q
	drawn := func(dom string) bool {
		return strings.Contains(dom, `data-ready="true"`) && !strings.Contains(dom, "data-error")
	}
	dom := runChromiumUntil(t, chromium, detail, drawn, "--dump-dom")
	if !drawn(dom) {
		t.Fatalf("the detail view did not finish drawing, in three loads:\n%s", tail(dom, 3000))
	}
	figures := figureTag.FindAllString(dom, -1)
	want := 1 + len(series.Burns) + 1 + 3 + 3 + len(series.Histograms)
	if len(figures) != want || len(series.Histograms) == 0 {
		t.Errorf("%d charts drawn, want %d (with %d histograms)", len(figures), want, len(series.Histograms))
	}
	for _, f := range figures {
		if p, _ := strconv.Atoi(attrOf(f, "data-points")); p == 0 {
			t.Errorf("a chart drew no data: %s", f)
		}
		if v := attrOf(f, "data-violations"); v != "0" {
			t.Errorf("a chart has estimates outside their bands: %s", f)
		}
	}
	checkEscaped(t, "detail view", dom)

	// The overview: the overloaded model is listed, escaped, with a link to
	// its charts.
	overview := runChromium(t, chromium, d.base+"/", "--dump-dom")
	checkEscaped(t, "overview", overview)
	if !containsAll(overview, "console-target", "interactive", `href="/slo?model=`) {
		t.Errorf("overview lacks the target, the SLO or the detail link:\n%s", tail(overview, 3000))
	}

	dir := os.Getenv("E2E_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for name, page := range map[string]string{"overview": d.base + "/", "detail": detail} {
		file, err := filepath.Abs(filepath.Join(dir, "console-"+name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		runChromium(t, chromium, page, "--window-size=1400,2400", "--screenshot="+file)
		checkPNG(t, file, 1400, 2400)
	}
}

// checkEscaped fails when the hostile model name is live markup in a DOM,
// or is not shown as text.
func checkEscaped(t *testing.T, what, dom string) {
	t.Helper()
	if strings.Contains(dom, "<script>alert") {
		t.Errorf("%s holds the model name as a live <script>", what)
	}
	if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("%s does not show the model name as text:\n%s", what, tail(dom, 2000))
	}
}

// checkPNG fails unless file is a PNG of the given size with more than one
// colour (an empty frame has one).
func checkPNG(t *testing.T, file string, width, height int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", file, err)
	}
	b := img.Bounds()
	if b.Dx() != width || b.Dy() != height {
		t.Errorf("screenshot %s is %dx%d, want %dx%d", file, b.Dx(), b.Dy(), width, height)
	}
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y && len(colours) < 16; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 16 {
		t.Errorf("screenshot %s has %d colours: an empty frame?", file, len(colours))
	}
}
