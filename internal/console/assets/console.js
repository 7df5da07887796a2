// The SLO console's charts, drawn with uPlot from the series JSON of
// /api/series (or from the JSON inlined by the static report). Every text
// from a target (model names, labels) is set with textContent, never as
// markup. After drawing, each figure carries data-points (values drawn) and
// data-violations (band points whose estimate leaves its bounds), and the
// body data-ready, so that a headless browser can check what was drawn.
(function () {
  "use strict";

  // Okabe–Ito: distinguishable with the common colour-vision deficiencies,
  // readable on light and dark backgrounds.
  const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999"];
  if (window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches) {
    // The dark blue is hard to see on a dark background: swap in the sky blue.
    PALETTE[0] = "#56B4E9";
    PALETTE[4] = "#0072B2";
  }
  const THRESHOLD = "#D55E00";

  function cssVar(name, fallback) {
    const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }

  function rgba(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16 & 255) + "," + (n >> 8 & 255) + "," + (n & 255) + "," + a + ")";
  }

  function fmt(v) {
    if (v == null || !isFinite(v)) return "–";
    const a = Math.abs(v);
    if (a !== 0 && (a < 0.001 || a >= 1e6)) return v.toExponential(3);
    return String(Number(v.toPrecision(4)));
  }

  function pct(v) {
    return v == null ? "–" : fmt(100 * v) + "%";
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  // A chart is a list of lines over x; bands pair an upper and a lower line
  // around an estimate line.
  function Chart(title, unit, percent) {
    this.title = title;
    this.unit = unit;
    this.percent = !!percent; // values are ratios, shown as percentages
    this.lines = [];
    this.bands = [];
    this.caption = "";
  }

  Chart.prototype.line = function (label, color, values, opts) {
    this.lines.push(Object.assign({ label: label, color: color, values: values }, opts || {}));
    return this.lines.length; // uPlot's series index (0 is x)
  };

  // band adds an estimate with its bounds as three lines and a fill between.
  Chart.prototype.band = function (label, color, b, valueFmt) {
    const est = this.line(label, color, b.estimate, { width: 2, fmt: valueFmt });
    const lo = this.line(label + " lower", color, b.lower, { width: 1, dash: [4, 4], alpha: 0.6, fmt: valueFmt, bound: true });
    const hi = this.line(label + " upper", color, b.upper, { width: 1, dash: [4, 4], alpha: 0.6, fmt: valueFmt, bound: true });
    this.bands.push({ est: est, lo: lo, hi: hi, color: color });
  };

  Chart.prototype.constant = function (label, value, n) {
    const vs = new Array(n).fill(value);
    this.line(label, THRESHOLD, vs, { width: 1.5, dash: [8, 4] });
  };

  // drawnPoints counts the non-null values of every line.
  // plots are resized with the window.
  const plots = [];
  let resizing = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      for (const p of plots) p.u.setSize({ width: Math.max(320, p.box.clientWidth), height: p.height });
    }, 150);
  });

  function drawnPoints(lines) {
    let n = 0;
    for (const l of lines) for (const v of l.values) if (v != null) n++;
    return n;
  }

  // violations counts the points where an estimate leaves its band; a null
  // upper bound is +Inf, a null lower bound beside an estimate is a fault.
  function violations(chart) {
    let n = 0;
    for (const b of chart.bands) {
      const est = chart.lines[b.est - 1].values, lo = chart.lines[b.lo - 1].values, hi = chart.lines[b.hi - 1].values;
      for (let i = 0; i < est.length; i++) {
        if (est[i] == null) continue;
        if (lo[i] == null || lo[i] > est[i] || (hi[i] != null && est[i] > hi[i])) n++;
      }
    }
    return n;
  }

  // clipRange is the y range that leaves out the early wide bands: the
  // estimates, the constant lines (goal, threshold) and the bounds after the
  // first fifth of the points, padded by a tenth. The first minutes' bounds
  // rest on little data and can be a hundred times wider than anything
  // after; they would flatten the chart. null when every bound fits, or
  // when clipping would gain less than half the height.
  function clipRange(chart) {
    if (!chart.bands.length) return null;
    let lo = Infinity, hi = -Infinity, blo = Infinity, bhi = -Infinity;
    for (const l of chart.lines) {
      const settled = Math.floor(l.values.length / 5);
      l.values.forEach(function (v, i) {
        if (v == null) return;
        if (l.bound) { blo = Math.min(blo, v); bhi = Math.max(bhi, v); }
        if (!l.bound || i >= settled) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      });
    }
    if (!isFinite(lo) || !isFinite(blo)) return null;
    const pad = Math.max((hi - lo) / 10, Math.abs(hi) / 20, 1e-6);
    const r = [lo - pad, hi + pad];
    if (chart.percent && hi <= 1) r[1] = Math.min(r[1], 1.02); // a share never exceeds 100%
    if (blo >= r[0] && bhi <= r[1]) return null;
    if ((Math.max(bhi, r[1]) - Math.min(blo, r[0])) < 1.5 * (r[1] - r[0])) return null;
    return { range: r, lo: blo, hi: bhi };
  }

  // timeTicks writes each tick of a time axis as 24-hour clock time, with the
  // date when the axis spans more than a day.
  function timeTicks(u, ticks) {
    const span = u.scales.x.max - u.scales.x.min;
    return ticks.map(function (t) {
      const d = new Date(t * 1000);
      const hm = String(d.getHours()).padStart(2, "0") + ":" + String(d.getMinutes()).padStart(2, "0");
      if (span <= 86400) return hm;
      return (d.getMonth() + 1) + "-" + String(d.getDate()).padStart(2, "0") + " " + hm;
    });
  }

  function draw(container, chart, x, opts) {
    opts = opts || {};
    const fig = el("figure", "chart");
    fig.appendChild(el("h3", null, chart.title));
    const plot = el("div", "plot");
    fig.appendChild(plot);
    if (chart.caption) fig.appendChild(el("figcaption", null, chart.caption));
    container.appendChild(fig);
    const fg = cssVar("--fg", "#222"), grid = cssVar("--grid", "#ddd");
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const xTime = !(opts.scales && opts.scales.x && opts.scales.x.time === false);
    const series = [{
      label: opts.xLabel || "time",
      value: function (u, v, si, idx) {
        if (idx == null) v = lastValue(u.data[0]);
        if (v == null) return "–";
        return xTime ? new Date(v * 1000).toLocaleTimeString([], { hour12: false }) + (idx == null ? " (newest)" : "") : fmt(v);
      },
    }];
    for (const l of chart.lines) {
      const f = l.fmt || fmt;
      series.push({
        label: l.label,
        stroke: l.alpha ? rgba(l.color, l.alpha) : l.color,
        width: l.width || 2,
        dash: l.dash,
        fill: l.fill,
        paths: l.paths,
        points: { show: false },
        // Off the plot the legend shows the newest value, not a dash.
        value: function (u, v, si, idx) { return f(idx == null ? lastValue(u.data[si]) : v); },
      });
    }
    const bands = chart.bands.map(function (b) {
      return { series: [b.hi, b.lo], fill: rgba(b.color, 0.18) };
    });
    const data = [x].concat(chart.lines.map(function (l) { return l.values; }));
    const width = Math.max(320, plot.clientWidth || fig.clientWidth || 600);
    const yAxis = Object.assign({ label: chart.unit, size: 64 }, axis);
    if (chart.percent) yAxis.values = function (u, ticks) { return ticks.map(function (v) { return fmt(100 * v) + "%"; }); };
    const scales = Object.assign({ x: { time: true } }, opts.scales || {});
    const clip = clipRange(chart);
    if (clip) {
      scales.y = { range: function () { return clip.range; } };
      const f = chart.percent ? pct : fmt;
      const note = el("figcaption", "clipped", "Axis clipped to the estimates' range: the bands reach from " + f(clip.lo) + " to " + f(clip.hi) +
        " (the early windows, which rest on little data), beyond the edge of the chart.");
      fig.appendChild(note);
      fig.dataset.clipped = "true";
    }
    const xAxis = Object.assign({ space: 70 }, axis, scales.x.time ? { values: timeTicks } : {}, opts.xAxis || {});
    /* global uPlot */
    const u = new uPlot({
      width: width,
      height: opts.height || 240,
      scales: scales,
      axes: [xAxis, yAxis],
      series: series,
      bands: bands,
      hooks: opts.hooks || {},
      legend: { live: true },
    }, data, plot);
    plots.push({ u: u, box: plot, height: opts.height || 240 });
    // The bounds draw the band; the legend names the estimate only.
    const rows = u.root.querySelectorAll(".u-legend .u-series");
    chart.lines.forEach(function (l, i) { if (l.bound && rows[i + 1]) rows[i + 1].style.display = "none"; });
    const points = drawnPoints(chart.lines);
    if (points === 0) fig.appendChild(el("figcaption", "empty", "No data in this range: the target does not expose what this chart needs, or no request finished."));
    fig.dataset.points = String(points);
    fig.dataset.violations = String(violations(chart));
    return fig;
  }

  function seriesCharts(s, box) {
    const x = s.times, n = x.length;
    const win = " (" + s.window + " windows)";
    const charts = [];

    const budget = new Chart("Error budget remaining over the " + fmtSeconds(s.slo.period_seconds) + " period", "budget left", true);
    budget.band("budget left", PALETTE[0], s.budget, pct);
    budget.constant("exhausted", 0, n);
    const cov = lastValue(s.covered);
    budget.caption = "Below 0% the budget is overspent. The band is where the truth lies. At the newest point the budget rests on " +
      (cov == null ? "no data" : pct(cov) + " of the period") + " (the history so far).";
    charts.push(budget);

    for (const b of s.burns) {
      const c = new Chart("Burn rate " + b.long + " / " + b.short + " (" + b.severity + ") against " + fmt(b.factor), "× budget rate");
      c.band("long " + b.long, PALETTE[0], b.long_burn);
      c.band("short " + b.short, PALETTE[1], b.short_burn);
      c.constant("threshold " + fmt(b.factor), b.factor, n);
      c.caption = "The alert fires while, in both windows, the upper bound and the evidence (the larger of the lower bound and the observed burn: the requests seen bad, abandoned and rejected ones as the SLO counts them) exceed the threshold.";
      charts.push(c);
    }

    const att = new Chart("Attainment per objective and joint" + win, "requests meeting", true);
    s.attainment.forEach(function (a, i) { att.band(a.name, PALETTE[i % PALETTE.length], a, pct); });
    att.constant("goal " + pct(s.slo.goal), s.slo.goal, n);
    att.caption = "\"all\" is the share of finished requests that met every objective.";
    charts.push(att);

    const byMetric = {};
    for (const l of s.latency) (byMetric[l.metric] = byMetric[l.metric] || []).push(l);
    for (const m of Object.keys(byMetric)) {
      const c = new Chart("Latency " + m + " quantiles" + win, "seconds");
      byMetric[m].forEach(function (l, i) { c.band("p" + fmt(100 * l.quantile), PALETTE[i % PALETTE.length], l); });
      const obj = s.slo.objectives.find(function (o) { return o.metric === m; });
      if (obj) c.constant("objective " + fmt(obj.threshold) + " s", obj.threshold, n);
      c.caption = "Each band is the bucket that certainly holds the quantile; the line is our estimate inside it.";
      charts.push(c);
    }

    const gp = new Chart("Goodput against finished throughput" + win, "tokens/s");
    gp.line("throughput", PALETTE[6], s.throughput, { width: 2 });
    gp.band("goodput", PALETTE[2], s.goodput);
    gp.caption = "Generated tokens of the finished requests that met every objective, against the generated tokens of all finished requests (one population: goodput never exceeds it).";
    charts.push(gp);

    const ab = new Chart("Abandoned requests beside vLLM's aborted count" + win, "requests");
    ab.band("abandoned", PALETTE[3], s.abandoned);
    ab.line("vLLM aborted", PALETTE[6], s.aborted, { width: 2 });
    ab.caption = "The band bounds the requests that got a first token and left without a finish (client cancellations, restarts). The line is what vLLM itself counted as aborted, not a bound: released vLLM does not count client cancellations (0 does not mean none), and it counts requests aborted before their first token.";
    charts.push(ab);

    const ll = new Chart("Little's Law: predicted λ·W against observed concurrency" + win, "requests");
    // Each stage in its own pair of colours: predicted solid, observed
    // dashed in another hue, so that the legend tells them apart.
    s.concurrency.forEach(function (c, i) {
      ll.line(c.stage + " predicted", PALETTE[i % 3], c.predicted, { width: 2 });
      ll.line(c.stage + " observed", PALETTE[3 + i % 3], c.observed, { width: 1.5, dash: [6, 3] });
    });
    ll.caption = "Predicted from the finished requests (exact); observed from vLLM's gauges at scrapes.";
    charts.push(ll);

    for (const c of charts) draw(box, c, x);
    for (const h of s.histograms) drawHistogram(box, h);
    return charts.length + s.histograms.length;
  }

  function drawHistogram(box, h) {
    const c = new Chart("Histogram of " + h.metric + " over the newest " + h.window + " window", "requests per decade");
    const stepped = uPlot.paths.stepped({ align: 1 });
    c.line("vLLM buckets", PALETTE[4], h.bars, { width: 1, fill: rgba(PALETTE[4], 0.3), paths: stepped });
    c.line("smoothed density", PALETTE[0], h.density, { width: 2 });
    c.caption = fmt(h.count) + " observations" + (h.above_last > 0 ? ", " + fmt(h.above_last) + " above the last finite edge (not drawn)" : "") +
      ". Shaded: the bucket that certainly holds each quantile; vertical line: our estimate. The curve is a smooth density that keeps each bucket's count.";
    const marks = h.quantiles;
    const threshold = h.threshold;
    const hooks = {
      draw: [function (u) {
        const ctx = u.ctx, top = u.bbox.top, height = u.bbox.height, left = u.bbox.left, right = left + u.bbox.width;
        ctx.save();
        ctx.font = (12 * devicePixelRatio) + "px system-ui, sans-serif";
        // Labels go in the first row where they overlap no label before.
        const rowEnds = [];
        function labelRow(x, w) {
          for (let r = 0; r < rowEnds.length; r++) {
            if (x > rowEnds[r] + 4 * devicePixelRatio) { rowEnds[r] = x + w; return r; }
          }
          rowEnds.push(x + w);
          return rowEnds.length - 1;
        }
        marks.forEach(function (q, i) {
          if (q.estimate == null && q.lower == null) return;
          const color = PALETTE[(i + 1) % PALETTE.length];
          const x0 = Math.max(left, q.lower > 0 ? u.valToPos(q.lower, "x", true) : left);
          const x1 = q.upper == null ? right : Math.min(right, u.valToPos(q.upper, "x", true));
          ctx.fillStyle = rgba(color, 0.12);
          ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
          if (q.estimate != null) {
            const xe = u.valToPos(q.estimate, "x", true);
            ctx.strokeStyle = color;
            ctx.lineWidth = 2;
            ctx.beginPath();
            ctx.moveTo(xe, top);
            ctx.lineTo(xe, top + height);
            ctx.stroke();
            ctx.fillStyle = color;
            const label = "p" + fmt(100 * q.q), w = ctx.measureText(label).width;
            const row = labelRow(xe + 3, w);
            ctx.fillText(label, xe + 3, top + 14 * devicePixelRatio * (1 + row));
          }
        });
        if (threshold != null) {
          const xt = u.valToPos(threshold, "x", true);
          ctx.strokeStyle = THRESHOLD;
          ctx.setLineDash([8, 4]);
          ctx.lineWidth = 1.5;
          ctx.beginPath();
          ctx.moveTo(xt, top);
          ctx.lineTo(xt, top + height);
          ctx.stroke();
        }
        ctx.restore();
      }],
    };
    const fig = draw(box, c, h.x, {
      xLabel: "seconds",
      scales: { x: { time: false, distr: 3 } },
      xAxis: { label: "latency (seconds, log scale)" },
      hooks: hooks,
    });
    let bad = 0;
    for (const q of marks) {
      if (q.estimate == null) continue;
      if (q.lower == null || q.lower > q.estimate || (q.upper != null && q.estimate > q.upper)) bad++;
    }
    fig.dataset.violations = String(Number(fig.dataset.violations) + bad);
  }

  function lastValue(vs) {
    for (let i = vs.length - 1; i >= 0; i--) if (vs[i] != null) return vs[i];
    return null;
  }

  // fmtSeconds writes a duration as the configuration does ("1d", "29m45s").
  function fmtSeconds(s) {
    const units = [[86400, "d"], [3600, "h"], [60, "m"], [1, "s"]];
    let out = "";
    s = Math.round(s);
    for (const u of units) {
      if (s >= u[0]) {
        out += Math.floor(s / u[0]) + u[1];
        s %= u[0];
      }
    }
    return out || "0s";
  }

  function show(section, s) {
    const box = section.querySelector(".charts");
    const status = section.querySelector(".status");
    for (const p of plots.splice(0)) p.u.destroy();
    box.textContent = "";
    const n = seriesCharts(s, box);
    status.textContent = s.times.length + " windows from " + new Date(s.from * 1000).toLocaleString([], { hour12: false }) +
      " to " + new Date(s.to * 1000).toLocaleString([], { hour12: false }) + ".";
    section.dataset.charts = String(n);
  }

  function load(section) {
    const inline = section.querySelector("script.series-data");
    if (inline) {
      show(section, JSON.parse(inline.textContent));
      return Promise.resolve();
    }
    return fetch(section.dataset.seriesUrl).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(r.status + ": " + t); });
      return r.json();
    }).then(function (s) { show(section, s); });
  }

  function main() {
    const sections = Array.from(document.querySelectorAll(".slo-detail"));
    Promise.all(sections.map(function (sec) {
      return load(sec).catch(function (err) {
        sec.querySelector(".status").textContent = "Cannot draw: " + err.message;
        sec.dataset.error = err.message;
      });
    })).then(function () {
      document.body.dataset.ready = "true";
      for (const sec of sections) {
        const every = Number(sec.dataset.refresh || 0);
        if (every > 0 && sec.dataset.seriesUrl) setInterval(function () { refresh(sec); }, every * 1000);
      }
    });
  }

  // refresh redraws a section from fresh data and replaces the headline
  // tiles with those of the page served now; body data-refreshes counts
  // the redraws.
  function refresh(section) {
    const tiles = document.querySelector(".tiles");
    const page = tiles ? fetch(location.href).then(function (r) { return r.text(); }).then(function (html) {
      const fresh = new DOMParser().parseFromString(html, "text/html").querySelector(".tiles");
      if (fresh) tiles.replaceWith(fresh);
    }) : Promise.resolve();
    return Promise.all([load(section), page]).then(function () {
      document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
    }).catch(function (err) {
      section.querySelector(".status").textContent = "Cannot refresh: " + err.message + " (the charts show the last data drawn)";
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
  else main();
})();
