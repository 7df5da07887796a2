package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"path"
	"slices"
	"strconv"

	"github.com/vllm-slo-exporter/vllm-slo-exporter/internal/pipeline"
	"github.com/vllm-slo-exporter/vllm-slo-exporter/slo"
)

//go:embed assets/uPlot.iife.min.js assets/uPlot.min.css assets/console.js assets/console.css
var assets embed.FS

// Options is what the console serves from.
type Options struct {
	// Report returns the latest report (nil before the first evaluation).
	Report func() *pipeline.Report
	// History evaluates past windows for the detail views; nil serves the
	// overview only.
	History History
	// RefreshSeconds is how often the overview reloads itself (0: 15).
	RefreshSeconds int
	// CacheEntries bounds the cached series (0: 64).
	CacheEntries int
	// Ring holds the daemon's evaluations, which the charts draw instead
	// of evaluating the history again; nil: every point is evaluated.
	Ring *Ring
}

// Console serves the overview at /, the detail view at /slo, the chart data
// at /api/series, the capacity curves at /capacity and the embedded assets
// under /assets/.
type Console struct {
	opts  Options
	cache *seriesCache
	mux   *http.ServeMux
}

// New returns the console's handler.
func New(opts Options) *Console {
	if opts.RefreshSeconds <= 0 {
		opts.RefreshSeconds = 15
	}
	if opts.CacheEntries <= 0 {
		opts.CacheEntries = 64
	}
	c := &Console{opts: opts, cache: newSeriesCache(opts.CacheEntries), mux: http.NewServeMux()}
	c.mux.HandleFunc("GET /{$}", c.serveOverview)
	c.mux.HandleFunc("GET /slo", c.serveDetail)
	c.mux.HandleFunc("GET /api/series", c.serveSeries)
	c.mux.HandleFunc("GET /capacity", c.serveCapacity)
	c.mux.HandleFunc("GET /assets/{name}", serveAsset)
	return c
}

// ServeHTTP routes a request to the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mux.ServeHTTP(w, r)
}

func (c *Console) report() *pipeline.Report {
	if c.opts.Report == nil {
		return nil
	}
	return c.opts.Report()
}

func (c *Console) serveOverview(w http.ResponseWriter, r *http.Request) {
	data := overviewPage{Refresh: c.opts.RefreshSeconds, Overview: buildOverview(c.report(), slosOf(c.opts.History), r.URL.Query().Get("sort"))}
	render(w, overviewTemplate, data)
}

func (c *Console) serveDetail(w http.ResponseWriter, r *http.Request) {
	q := queryOf(r)
	if c.opts.History == nil {
		http.Error(w, "this server keeps no history to draw", http.StatusNotFound)
		return
	}
	page := detailPage{Query: q, Ranges: rangeChoices(q), Windows: windowChoices(c.opts.History, q), Refresh: c.opts.RefreshSeconds}
	page.DataURL = "/api/series?" + q.values().Encode()
	page.Tiles = headline(c.report(), slosOf(c.opts.History), q)
	render(w, detailTemplate, page)
}

func (c *Console) serveSeries(w http.ResponseWriter, r *http.Request) {
	if c.opts.History == nil {
		http.Error(w, "this server keeps no history to draw", http.StatusNotFound)
		return
	}
	q := queryOf(r)
	body, err := c.seriesJSON(q)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errNotFound) {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body)
}

// headline is the detail page's tiles for the query's SLO at the latest
// evaluation, or nil when the evaluation does not hold it.
func headline(rep *pipeline.Report, slos []slo.SLO, q query) *tiles {
	if rep == nil {
		return nil
	}
	o := buildOverview(rep, slos, "worst")
	i := slices.IndexFunc(o.Rows, func(r Row) bool { return r.Target == q.Target && r.Model == q.Model && r.SLO == q.SLO })
	if i < 0 {
		return nil
	}
	t := &tiles{Row: o.Rows[i], Now: rep.Time}
	for _, a := range o.Active {
		if alertMatches(a.Alert, q.Target, q.Model, q.SLO) {
			t.Alerts = append(t.Alerts, a)
		}
	}
	// Attainment now: the shortest window that is not filling, else the
	// shortest that knows one.
	for _, a := range t.Row.Attainment {
		if !a.Known {
			continue
		}
		if !t.Attainment.Known {
			t.Attainment = a
		}
		if !a.Filling {
			t.Attainment = a
			break
		}
	}
	return t
}

// seriesJSON returns the series of a query, from the cache when the target
// has not been scraped since it was computed.
func (c *Console) seriesJSON(q query) ([]byte, error) {
	_, newest, err := c.opts.History.Span(q.Target)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, errNotFound)
	}
	key := q.key(newest, c.opts.Ring.version(), c.opts.History.Spec())
	if body, ok := c.cache.get(key); ok {
		return body, nil
	}
	s, err := buildSeries(c.opts.History, q, c.opts.Ring)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode series: %w", err)
	}
	c.cache.put(key, body)
	return body, nil
}

// queryOf reads a detail or series request; points beyond maxPoints are
// capped when evaluated.
func queryOf(r *http.Request) query {
	v := r.URL.Query()
	q := query{Target: v.Get("target"), Model: v.Get("model"), SLO: v.Get("slo"), Range: v.Get("range"), Window: v.Get("window")}
	if q.Range == "" {
		q.Range = "1h"
	}
	if n, err := strconv.Atoi(v.Get("points")); err == nil && n > 0 {
		q.Points = min(n, maxPoints)
	}
	return q
}

// render executes a template into a buffer first, so that an error is a
// clean 500 rather than half a page.
func render(w http.ResponseWriter, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		http.Error(w, "render page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	body, err := assets.ReadFile("assets/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Write(body)
}
