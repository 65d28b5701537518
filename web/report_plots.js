// The report page's charts (strata analyze --html), drawn straight on a
// canvas: bar charts (drawBars) and the spatial and temporal patterns of the
// data set and checkpoint files (drawPattern). A charting library resolves
// options and builds an element per bar and point: its first chart alone
// took a quarter of a second of a 256-process page, 8 scatter plots of 2048
// points a second; rectangles of one colour per series take milliseconds.
// Every value is written on the chart or in its legend (no tooltips needed).
// Embedded after web/report_timeline.js and before web/report.js; the pure
// logic (`StrataPlots`: size classes, ticks, extents, the value axis) is
// exported under node for tests/web/report_plots_logic.test.mjs.
const StrataPlots = {
  CLASSES: 8,

  // The size class (0..CLASSES-1, log scale up to `maxSize`) of a request.
  sizeClass(size, maxSize) {
    const top = Math.log1p(Math.max(1, maxSize) + 1);
    return Math.min(this.CLASSES - 1, Math.floor(this.CLASSES * Math.log1p(Math.max(0, size)) / top));
  },

  // The smallest and largest request size of class k (bytes, inclusive).
  classBounds(k, maxSize) {
    const top = Math.log1p(Math.max(1, maxSize) + 1);
    const lo = Math.ceil(Math.expm1(k * top / this.CLASSES));
    const hi = Math.ceil(Math.expm1((k + 1) * top / this.CLASSES)) - 1;
    return [lo, Math.min(hi, Math.max(1, maxSize))];
  },

  // [lo, hi] covering every value, widened when all values are equal.
  extent(values) {
    let lo = Infinity, hi = -Infinity;
    for (const v of values) { if (v < lo) lo = v; if (v > hi) hi = v; }
    if (!(lo <= hi)) return [0, 1];
    if (lo === hi) return [lo - 1, hi + 1];
    return [lo, hi];
  },

  // Tick values: a step of 1, 2 or 5 times a power of ten, about `n` of them in [lo, hi].
  ticks(lo, hi, n) {
    const raw = (hi - lo) / Math.max(1, n), p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw) || raw;
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    return out;
  },

  // The end of the value axis: `max` when given, else the largest bar (or
  // stack), rounded up to a tick; never 0.
  valueMax(series, stacked, max) {
    if (max !== undefined) return max;
    let top = 0;
    const n = Math.max(0, ...series.map((s) => s.values.length));
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (const s of series) {
        const v = Math.max(0, s.values[i] || 0);
        sum = stacked ? sum + v : Math.max(sum, v);
      }
      top = Math.max(top, sum);
    }
    if (top <= 0) return 1;
    const t = this.ticks(0, top, 5);
    const step = t.length > 1 ? t[1] - t[0] : top;
    return Math.ceil(top / step - 1e-9) * step;
  },

  // `text` cut with an ellipsis to fit `width` pixels as measured by `measure`.
  fit(text, width, measure) {
    if (measure(text) <= width) return text;
    let lo = 0, hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (measure(text.slice(0, mid) + '\u2026') <= width) lo = mid; else hi = mid - 1;
    }
    return text.slice(0, lo) + '\u2026';
  },

  // Points grouped by size class: per class the [x, y] pairs and the count.
  classify(points, xOf, maxSize) {
    const classes = Array.from({length: this.CLASSES}, () => []);
    for (const p of points) classes[this.sizeClass(p[2], maxSize)].push([xOf(p), p[1]]);
    return classes;
  },
};

if (typeof module !== 'undefined') module.exports = StrataPlots;

const legendItem = (colour, text) => {
  const item = el('span', undefined, 'legend-item');
  const sw = el('span', undefined, 'swatch');
  sw.style.background = colour;
  item.append(sw, text);
  return item;
};

// A bar chart on `canvas` (sized by its parent box) with its legend in
// `legend`. spec: {categories, series: [{label, colour, values}], horizontal,
// stacked, max, valueTitle, categoryTitle, valueText(v), width, height}. Values are written
// at the end of each bar when they fit; stacked shares are in the legend.
// Returns the bars drawn (non-zero values).
function drawBars(canvas, legend, spec) {
  const P = StrataPlots;
  // The box's size from its class (report.css), not from layout: reading
  // clientWidth would lay out the whole page before each chart.
  const box = canvas.parentElement;
  const width = spec.width || (box.classList.contains('small') ? 500 : 900);
  const height = spec.height || (box.classList.contains('bar') ? 110 : box.classList.contains('small') ? 240 : 320);
  canvas.width = width;
  canvas.height = height;
  const g = canvas.getContext('2d');
  g.font = '11px sans-serif';
  const measure = (t) => g.measureText(t).width;
  const cats = spec.categories, series = spec.series, n = Math.max(1, cats.length);
  const vmax = P.valueMax(series, spec.stacked, spec.max);
  const vticks = P.ticks(0, vmax, spec.horizontal ? 8 : 5);
  const text = spec.valueText || ((v) => String(v));
  g.fillStyle = '#fff';
  g.fillRect(0, 0, width, height);
  let left, top = 8, right = width - (spec.horizontal ? 28 : 14), bottom;
  if (spec.horizontal) {
    left = Math.min(Math.round(width * 0.4), Math.max(40, ...cats.map(measure)) + 10);
    bottom = height - (spec.valueTitle ? 32 : 18);
  } else {
    left = Math.max(...vticks.map((t) => measure(text(t)))) + 12 + (spec.valueTitle ? 14 : 0);
    bottom = height - (spec.categoryTitle ? 34 : 20);
  }
  const plotW = right - left, plotH = bottom - top;
  const band = (spec.horizontal ? plotH : plotW) / n;
  const at = (v) => Math.min(1, Math.max(0, v / vmax)) * (spec.horizontal ? plotW : plotH);
  // Grid and value ticks.
  g.fillStyle = '#e6e6e6';
  vticks.forEach((t) => spec.horizontal ? g.fillRect(left + Math.round(at(t)), top, 1, plotH)
    : g.fillRect(left, bottom - Math.round(at(t)), plotW, 1));
  g.fillStyle = '#444';
  g.fillRect(left, top, 1, plotH);
  g.fillRect(left, bottom, plotW, 1);
  g.textAlign = spec.horizontal ? 'center' : 'right';
  vticks.forEach((t) => spec.horizontal ? g.fillText(text(t), left + at(t), bottom + 13)
    : g.fillText(text(t), left - 4, bottom - at(t) + 4));
  // Category labels.
  cats.forEach((c, i) => {
    if (spec.horizontal) {
      g.textAlign = 'right';
      g.fillText(P.fit(c, left - 8, measure), left - 5, top + band * (i + 0.5) + 4);
    } else {
      g.textAlign = 'center';
      g.fillText(P.fit(c, band - 4, measure), left + band * (i + 0.5), bottom + 13);
    }
  });
  // Axis titles.
  g.textAlign = 'center';
  if (spec.horizontal && spec.valueTitle) g.fillText(spec.valueTitle, left + plotW / 2, height - 4);
  if (!spec.horizontal && spec.categoryTitle) g.fillText(spec.categoryTitle, left + plotW / 2, height - 4);
  if (!spec.horizontal && spec.valueTitle) {
    g.save();
    g.translate(10, top + plotH / 2);
    g.rotate(-Math.PI / 2);
    g.fillText(spec.valueTitle, 0, 0);
    g.restore();
  }
  // The bars: one band per category, stacked or side by side.
  const thick = Math.max(1, band * (spec.horizontal && !spec.stacked ? 0.75 : 0.7));
  const sub = spec.stacked ? thick : thick / Math.max(1, series.length);
  let bars = 0;
  cats.forEach((_, i) => {
    let base = 0;
    series.forEach((s, k) => {
      const v = Math.max(0, s.values[i] || 0);
      if (v <= 0) return;
      const a = at(base), b = at(spec.stacked ? base + v : v);
      const off = (band - thick) / 2 + (spec.stacked ? 0 : k * sub);
      g.fillStyle = s.colour;
      if (spec.horizontal) g.fillRect(left + 1 + a, top + band * i + off, Math.max(1, b - a), sub);
      else g.fillRect(left + band * i + off, bottom - b, sub, Math.max(1, b - a));
      bars++;
      if (!spec.stacked) {
        const label = text(v);
        g.fillStyle = '#222';
        if (spec.horizontal && measure(label) + 6 < plotW - b) {
          g.textAlign = 'left';
          g.fillText(label, left + b + 4, top + band * i + off + sub / 2 + 4);
        } else if (!spec.horizontal && measure(label) <= sub + 2 && b + 14 < plotH) {
          g.textAlign = 'center';
          g.fillText(label, left + band * i + off + sub / 2, bottom - b - 3);
        }
      }
      if (spec.stacked) base += v;
    });
  });
  series.forEach((s) => legend.appendChild(legendItem(s.colour, s.label)));
  canvas.dataset.series = series.length;
  canvas.dataset.bars = bars;
  return bars;
}

// Draws `f.points` ([time s, offset, size, pid, write]) of one file on
// `canvas`, x = pid ('spatial') or time ('temporal'); the legend (one entry
// per size class present: the colour scale) goes into `legend`. Returns the
// points drawn.
function drawPattern(canvas, legend, f, kind, fmt) {
  const P = StrataPlots;
  const width = 900, height = 320, left = 78, right = 12, top = 10, bottom = 40;
  canvas.width = width;
  canvas.height = height;
  const g = canvas.getContext('2d');
  const xOf = kind === 'spatial' ? (p) => p[3] : (p) => p[0];
  let maxSize = 1;
  for (const p of f.points) if (p[2] > maxSize) maxSize = p[2];
  const [x0, x1] = P.extent(f.points.map(xOf));
  const [, y1raw] = P.extent(f.points.map((p) => p[1]));
  const y0 = 0, y1 = Math.max(1, y1raw);
  const plotW = width - left - right, plotH = height - top - bottom;
  const px = (x) => left + (x - x0) / (x1 - x0) * plotW;
  const py = (y) => top + plotH - (y - y0) / (y1 - y0) * plotH;
  g.fillStyle = '#fff';
  g.fillRect(0, 0, width, height);
  // Grid, ticks and axis titles.
  g.font = '11px sans-serif';
  g.fillStyle = '#e6e6e6';
  const xt = P.ticks(x0, x1, 8), yt = P.ticks(y0, y1, 5);
  xt.forEach((t) => g.fillRect(Math.round(px(t)), top, 1, plotH));
  yt.forEach((t) => g.fillRect(left, Math.round(py(t)), plotW, 1));
  g.fillStyle = '#444';
  g.fillRect(left, top, 1, plotH);
  g.fillRect(left, top + plotH, plotW, 1);
  g.textAlign = 'center';
  xt.forEach((t) => g.fillText(kind === 'spatial' ? String(Math.round(t)) : t.toPrecision(3).replace(/\.?0+$/, ''), px(t), top + plotH + 14));
  g.fillText(kind === 'spatial' ? 'pid' : 'time (s)', left + plotW / 2, height - 6);
  g.textAlign = 'right';
  yt.forEach((t) => g.fillText(fmt(t), left - 4, py(t) + 4));
  g.save();
  g.translate(12, top + plotH / 2);
  g.rotate(-Math.PI / 2);
  g.textAlign = 'center';
  g.fillText('file offset', 0, 0);
  g.restore();
  // The points: 3x3 squares, one colour per size class, small first so large requests stay on top.
  const classes = P.classify(f.points, xOf, maxSize);
  let drawn = 0;
  classes.forEach((pts, k) => {
    if (!pts.length) return;
    const colour = 'hsl(' + Math.round(240 - 240 * k / (P.CLASSES - 1)) + ',80%,45%)';
    g.fillStyle = colour;
    for (const [x, y] of pts) { g.fillRect(Math.round(px(x)) - 1, Math.round(py(y)) - 1, 3, 3); drawn++; }
    const [lo, hi] = P.classBounds(k, maxSize);
    legend.appendChild(legendItem(colour, 'requests ' + fmt(lo) + ' - ' + fmt(hi) + ' (' + pts.length + ')'));
  });
  canvas.dataset.points = f.points.length;
  canvas.dataset.pointsDrawn = drawn;
  canvas.dataset.series = legend.childElementCount;
  return drawn;
}
