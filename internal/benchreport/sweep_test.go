package benchreport

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// closedLoop generates a closed-loop run at concurrency c for 60 s: each of
// c clients sends its next request when the last one finished. TTFT grows
// with c (0.1 s + 15 ms per client) and TPOT too (20 ms + 0.5 ms per
// client), so under TTFT <= 500 ms and TPOT <= 50 ms every request is good
// up to c = 26 and none from c = 27 on.
func closedLoop(r *rand.Rand, c int) genFile {
	g := genFile{rate: "inf", maxConc: c, latencies: true, startTimes: true, errorsList: true, modelID: "sweep"}
	for range c {
		t := r.Float64() * 0.1
		for t < 60 {
			ttft := 0.1 + 0.015*float64(c) + r.Float64()*0.01
			gap := 0.02 + 0.0005*float64(c)
			req := genReq{start: t, ttft: ttft, plen: 200, olen: 100}
			for range 99 {
				req.itls = append(req.itls, gap)
			}
			req.latency = ttft + 99*gap
			g.reqs = append(g.reqs, req)
			t += req.latency
		}
	}
	g.duration = 60
	for _, q := range g.reqs {
		g.duration = math.Max(g.duration, q.start+q.latency)
	}
	return g
}

// sweepFiles writes closed-loop runs for the concurrencies, in shuffled
// order, and returns their paths.
func sweepFiles(t *testing.T, dir string, concurrencies []int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	var paths []string
	for _, c := range concurrencies {
		paths = append(paths, closedLoop(r, c).write(t, dir, fmt.Sprintf("c%03d.json", c)))
	}
	r.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	return paths
}

// TestSweepKnee: goodput rises with concurrency up to 16 and collapses at 32
// (TTFT 0.58 s > 500 ms), so the knee is c=16, and the reason names both.
func TestSweepKnee(t *testing.T) {
	dir := t.TempDir()
	paths := sweepFiles(t, dir, []int{1, 8, 16, 32, 64})
	plot := filepath.Join(dir, "sweep.svg")
	var buf bytes.Buffer
	opts := Options{Bench: paths, Goodput: []string{"ttft:500", "tpot:50"}, Plot: plot}
	out, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	s := out.Sweep
	if s.Load != LoadConcurrency {
		t.Fatalf("load axis %s, want max_concurrency", s.Load)
	}
	for i, c := range []int{1, 8, 16, 32, 64} {
		if s.Points[i].MaxConcurrency != c {
			t.Fatalf("point %d has concurrency %d, want %d (sorted by load)", i, s.Points[i].MaxConcurrency, c)
		}
	}
	if s.Knee != 2 {
		t.Fatalf("knee at %d (%s), want 2 (c=16)", s.Knee, s.LoadLabel(max(s.Knee, 0)))
	}
	for _, want := range []string{"at c=32", "goodput falls", "p99 TTFT", "breaks the 500 ms objective"} {
		if !strings.Contains(s.KneeReason, want) {
			t.Errorf("knee reason %q lacks %q", s.KneeReason, want)
		}
	}
	if g := s.Points[3].Goodput.GoodRequests; g != 0 {
		t.Errorf("c=32 has %d good requests, want 0", g)
	}
	if err := Run(context.Background(), opts, &buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{"c=16 (knee)", "note: knee: c=16", "c=1 ", "c=64"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	checkSVG(t, plot, len(s.Points))
}

// TestSweepKneeAtEnd: when goodput still rises at the last point, the knee
// is the last point and the reason says to sweep further.
func TestSweepKneeAtEnd(t *testing.T) {
	dir := t.TempDir()
	out, err := Build(context.Background(), Options{Bench: sweepFiles(t, dir, []int{1, 4, 8}), Goodput: []string{"ttft:500"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Sweep.Knee != 2 || !strings.Contains(out.Sweep.KneeReason, "sweep further") {
		t.Errorf("knee %d reason %q, want 2 and 'sweep further'", out.Sweep.Knee, out.Sweep.KneeReason)
	}
}

// TestSweepByRate sorts request-rate sweeps numerically, inf last.
func TestSweepByRate(t *testing.T) {
	var rs []BenchResult
	for _, rate := range []float64{math.Inf(1), 10, 2.5, 5} {
		rs = append(rs, BenchResult{RequestRate: Num(rate)})
	}
	s := NewSweep(rs)
	var got []string
	for i := range s.Points {
		got = append(got, s.LoadLabel(i))
	}
	if want := "rate=2.5 rate=5 rate=10 rate=inf"; strings.Join(got, " ") != want {
		t.Errorf("order %q, want %q", strings.Join(got, " "), want)
	}
	if s.Knee != -1 {
		t.Errorf("knee %d without goodput, want -1", s.Knee)
	}
}

// checkSVG parses the plot as XML and finds both curves with one vertex per
// point, the axes, the legend and the knee.
func checkSVG(t *testing.T, path string, points int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	ids := map[string]string{}
	texts := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("plot is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			for _, a := range el.Attr {
				if a.Name.Local == "id" {
					ids[a.Value] = el.Name.Local
					if el.Name.Local == "polyline" {
						for _, b := range el.Attr {
							if b.Name.Local == "points" {
								if n := len(strings.Fields(b.Value)); n != points {
									t.Errorf("%s has %d vertices, want %d", a.Value, n, points)
								}
							}
						}
					}
				}
			}
		case xml.CharData:
			texts += string(el) + " "
		}
	}
	for id, el := range map[string]string{"throughput": "polyline", "goodput": "polyline", "axes": "g", "legend": "g", "knee": "circle", "ttft-objective": "line"} {
		if ids[id] != el {
			t.Errorf("plot lacks <%s id=%q> (ids: %v)", el, id, ids)
		}
	}
	for _, want := range []string{"p99 time to first token (ms)", "output tokens per second", "throughput", "goodput (within SLO)", "c=16", "knee"} {
		if !strings.Contains(texts, want) {
			t.Errorf("plot text lacks %q", want)
		}
	}
}

// TestPlotInChromium loads the SVG in headless Chromium and finds both
// curves in the DOM it built. Skipped without Chromium, except in CI.
func TestPlotInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium not installed in CI: %v", err)
		}
		t.Skip("chromium not installed")
	}
	dir := t.TempDir()
	plot := filepath.Join(dir, "sweep.svg")
	opts := Options{Bench: sweepFiles(t, dir, []int{1, 8, 16, 32}), Goodput: []string{"ttft:500", "tpot:50"}, Plot: plot}
	if err := Run(context.Background(), opts, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60e9)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+plot)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{`<polyline id="throughput"`, `<polyline id="goodput"`, "<svg", "knee"} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("chromium's DOM lacks %q:\n%.2000s", want, dom)
		}
	}
}
