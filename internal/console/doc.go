// Package console is the daemon's web console: an overview of every SLO of
// every target and model, as the on-call's status board (the alert state of
// each model's SLO, worst first; goal and objectives; attainment per window
// coloured against the goal with its bound beside it; error budget left, what
// it rests on and how long it lasts; the burn rates of the SLO's own alerts;
// windows still filling marked; each number's source in exact mode) and, per
// SLO and model, headline tiles and charts over a chosen range: budget
// burn-down, burn rates against their thresholds, attainment, latency
// quantiles, goodput against throughput, Little's Law and the newest
// window's histogram with a smooth density that keeps each bucket's count.
// Every estimate is drawn with the band its bounds make; the truth cannot
// leave the band.
//
// The console only renders: every number it prints is one the pipeline's
// report holds (package status gathers them per SLO), the same value
// /metrics exports at that evaluation, and it calls no function of package
// slo.
//
// The charts draw the daemon's own evaluations: every report it publishes
// is kept, without its histograms, in a bounded ring (Ring) that a chart
// reads one point per grid cell from, so that a chart shows what the daemon
// said at each time and costs no evaluation. Points the ring does not reach
// (before the daemon started, or beyond the depth a large fleet's budget
// leaves a model) are evaluated on request from the daemon's history:
// windows ending at past scrapes, evaluated by the pipeline exactly as the
// live series are. The JSON of each series is kept in a small bounded cache
// keyed by the newest scrape and the ring's evaluations. The same page can
// be written as one self-contained HTML file (WriteStatic) for a recording,
// every point evaluated.
//
// Charts are drawn in the browser by uPlot 1.6.32 (MIT, from npm; see
// assets/README.uPlot and assets/LICENSE.uPlot), embedded in the binary:
// about 51 kB of script (22 kB gzipped) for every chart type we
// need (time series, bands between two series, stepped histograms, log axes,
// drawing hooks), against a server-side SVG library whose every chart would
// be sent as markup on each refresh. A maintainer changes a chart in
// assets/console.js; nothing is fetched from a CDN and no font is
// downloaded. Text from targets (model names, labels) reaches the pages only
// through html/template and JSON, and the script sets it with textContent.
//
// The console must never write to the history, never read a clock (time
// comes from the history's scrapes) and never serve more than a bounded
// number of windows per request.
package console
