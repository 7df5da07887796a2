package benchreport

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestParseBenchNotABenchResult: a JSON object with none of a bench result's
// keys (a dashboard, a config, a recording's line) is named as not a vllm
// bench serve result, not as a result saved without --save-result; one with
// some of its keys keeps the message about what is missing.
func TestParseBenchNotABenchResult(t *testing.T) {
	for _, body := range []string{`{}`, `{"dashboard": {"title": "vLLM"}, "panels": []}`, `{"time": "2026-01-01T00:00:00Z", "target": "a", "body": "x"}`} {
		_, err := ParseBench([]byte(body), "x.json")
		if err == nil {
			t.Fatalf("%s: no error", body)
		}
		msg := err.Error()
		for _, want := range []string{"x.json", "not a vllm bench serve result", "none of its keys", "duration"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q lacks %q", body, msg, want)
			}
		}
		if strings.Contains(msg, "no duration") {
			t.Errorf("%s: error %q still says no duration", body, msg)
		}
	}
	_, err := ParseBench([]byte(`{"backend": "vllm", "ttfts": []}`), "y.json")
	if err == nil || !strings.Contains(err.Error(), "no duration") || strings.Contains(err.Error(), "not a vllm bench") {
		t.Errorf("a result without duration: %v, want the no-duration message", err)
	}
}

// TestGoodputWarnings: a threshold under 1 ms is read as milliseconds, as
// vLLM does, and warned about with the spelling of the same number in
// seconds; plausible thresholds give no warning. The warning comes before
// the tables in text and markdown, and in the JSON.
func TestGoodputWarnings(t *testing.T) {
	objs, err := ParseGoodput([]string{"ttft:0.5", "tpot:50", "e2el:0"})
	if err != nil {
		t.Fatal(err)
	}
	ws := GoodputWarnings(objs)
	if len(ws) != 2 {
		t.Fatalf("warnings %q, want two (ttft:0.5 and e2el:0)", ws)
	}
	for _, want := range []string{"ttft:0.5 is 0.5 ms", "takes milliseconds", "for 0.5 s write ttft:500"} {
		if !strings.Contains(ws[0], want) {
			t.Errorf("warning %q lacks %q", ws[0], want)
		}
	}
	if !strings.Contains(ws[1], "e2el:0 is 0 ms") || strings.Contains(ws[1], "write") {
		t.Errorf("warning %q: want e2el:0 named without a suggestion", ws[1])
	}
	if ws := GoodputWarnings([]Objective{{"ttft", 1}, {"tpot", 50}}); ws != nil {
		t.Errorf("warnings %q for 1 ms and 50 ms, want none", ws)
	}

	dir := t.TempDir()
	path := closedLoop(rand.New(rand.NewPCG(1, 2)), 4).write(t, dir, "c4.json")
	for _, format := range []string{"text", "markdown", "json"} {
		var buf bytes.Buffer
		if err := Run(context.Background(), Options{Bench: []string{path}, Goodput: []string{"ttft:0.5"}, Format: format}, &buf); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		i := strings.Index(out, "for 0.5 s write ttft:500")
		if i < 0 {
			t.Fatalf("%s output lacks the warning:\n%s", format, out)
		}
		if format != "json" && i > strings.Index(out, "vllm bench serve results") {
			t.Errorf("%s: the warning comes after the table:\n%s", format, out)
		}
	}
	var buf bytes.Buffer
	if err := Run(context.Background(), Options{Bench: []string{path}, Goodput: []string{"ttft:500"}}, &buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "warning") {
		t.Errorf("ttft:500 gave a warning:\n%s", buf.String())
	}
}

// svgText is one <text> of the plot with the box it covers, estimated as
// the plot estimates it.
type svgText struct {
	text                   string
	group                  string
	left, right, top, base float64
}

// plotTexts reads every <text> of an SVG with the id of its innermost group.
func plotTexts(t *testing.T, svg []byte) []svgText {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var groups []string
	var out []svgText
	var cur *svgText
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("plot is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch el.Name.Local {
			case "g":
				groups = append(groups, attr["id"])
			case "text":
				x, _ := strconv.ParseFloat(attr["x"], 64)
				y, _ := strconv.ParseFloat(attr["y"], 64)
				size := 12.0
				if s, ok := attr["font-size"]; ok {
					size, _ = strconv.ParseFloat(s, 64)
				}
				cur = &svgText{left: x, top: y - size, base: y, right: size}
				if attr["dominant-baseline"] == "middle" {
					cur.top, cur.base = y-size/2, y+size/2
				}
				if len(groups) > 0 {
					cur.group = groups[len(groups)-1]
				}
				if attr["text-anchor"] == "end" {
					cur.left = -x // resolved at the end element, once the width is known
				}
			}
		case xml.CharData:
			if cur != nil {
				cur.text += string(el)
			}
		case xml.EndElement:
			switch el.Name.Local {
			case "g":
				groups = groups[:len(groups)-1]
			case "text":
				w := textWidth(cur.text, cur.right)
				if cur.left < 0 {
					cur.left, cur.right = -cur.left-w, -cur.left
				} else {
					cur.right = cur.left + w
				}
				out = append(out, *cur)
				cur = nil
			}
		}
	}
}

// TestPlotLabelsClearOfLegend: a single run at rate 1 sits in the top right
// corner of the plotting area, where its label used to run into the legend;
// the labels of the points, of the TTFT objective and of the knee now stay
// inside the plotting area, and no text overlaps the legend's.
func TestPlotLabelsClearOfLegend(t *testing.T) {
	point := func(rate, ttft, tokens float64) BenchResult {
		return BenchResult{RequestRate: Num(rate), OutputThroughput: tokens,
			TTFT:    Stat{Count: 100, Percentiles: []Percentile{{Q: 0.99, Value: ttft}}},
			Goodput: &GoodputResult{Objectives: []Objective{{"ttft", 200}}, RequestsPerSecond: rate, TokensPerSecond: tokens}}
	}
	sweeps := map[string]Sweep{
		"one run":          NewSweep([]BenchResult{point(1, 0.2, 1000)}),
		"knee at the edge": NewSweep([]BenchResult{point(1, 0.1, 500), point(2, 0.2, 1000)}),
	}
	for name, s := range sweeps {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WritePlot(&buf, s); err != nil {
				t.Fatal(err)
			}
			texts := plotTexts(t, buf.Bytes())
			var legend []svgText
			for _, x := range texts {
				if x.group == "legend" {
					legend = append(legend, x)
				}
			}
			if len(legend) == 0 {
				t.Fatal("no legend text")
			}
			labels := 0
			for _, x := range texts {
				if x.group == "legend" {
					continue
				}
				if x.group == "point-labels" || x.text == "knee" || strings.HasPrefix(x.text, "TTFT objective") {
					labels++
					if x.left < marginL || x.right > marginL+innerW || x.top < marginT {
						t.Errorf("label %q spans x [%.1f, %.1f], top %.1f: outside the plotting area x [%d, %.0f], top %d",
							x.text, x.left, x.right, x.top, marginL, marginL+innerW, marginT)
					}
				}
				for _, l := range legend {
					if x.left < l.right && l.left < x.right && x.top < l.base && l.top < x.base {
						t.Errorf("%q [%.1f, %.1f]×[%.1f, %.1f] overlaps the legend's %q [%.1f, %.1f]×[%.1f, %.1f]",
							x.text, x.left, x.right, x.top, x.base, l.text, l.left, l.right, l.top, l.base)
					}
				}
			}
			if want := len(s.Points) + map[bool]int{true: 2}[s.Knee >= 0]; labels != want {
				t.Errorf("%d labels checked, want %d", labels, want)
			}
			if !strings.Contains(buf.String(), ">rate=1<") {
				t.Errorf("plot lacks the rate=1 label")
			}
		})
	}
}
