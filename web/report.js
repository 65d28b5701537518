// The report page's views (strata analyze --html), embedded into the page at
// build time (src/analysis/CMakeLists.txt). The page defines `D`, the report's
// data (src/analysis/report_html.cc), before this script; web/report_plots.js
// before both. Every view counts itself in body[data-charts-drawn] and the
// page says how many it expects in body[data-charts-expected], so a headless
// browser test can tell a view that failed from one that was never drawn.
let drawn = 0;
let expected = 0;
const done = () => { drawn++; document.body.dataset.chartsDrawn = drawn; };
// Views below the first screen: each drawn when it comes near the viewport
// (IntersectionObserver), or else a few per task after the first screen, so
// the first screen never waits for them and none needs scrolling to appear.
const lazyViews = [];
const later = (host, draw) => { expected++; lazyViews.push({host, draw, drawn: false}); };
const drawLazy = (v) => { if (v.drawn) return; v.drawn = true; v.draw(); done(); };
const startLazyViews = () => {
  const seen = new IntersectionObserver((entries) => entries.forEach((e) => {
    if (e.isIntersecting) drawLazy(lazyViews.find((v) => v.host === e.target));
  }), {rootMargin: '300px'});
  lazyViews.forEach((v) => seen.observe(v.host));
  // Several views per task, up to ~50 ms: each task ends in a frame that
  // lays out and paints the whole page, which costs more than a chart.
  let next = 0;
  const pump = () => {
    const start = performance.now();
    do {
      while (next < lazyViews.length && lazyViews[next].drawn) next++;
      if (next === lazyViews.length) { seen.disconnect(); return; }
      drawLazy(lazyViews[next]);
    } while (performance.now() - start < 50);
    setTimeout(pump, 0);
  };
  setTimeout(pump, 0);
};
const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
  '#bcbd22', '#17becf'];
const R = D.report;
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls; return e; };
const seconds = (s) => s >= 1 ? s.toPrecision(3) + ' s' : s >= 1e-3 ? (s * 1e3).toPrecision(3) + ' ms'
  : (s * 1e6).toPrecision(3) + ' \u00b5s';
// A legend box right after the chart's box (the heading stays right before it).
const legendAfter = (canvas) => { const l = el('div', undefined, 'plot-legend'); canvas.parentElement.after(l); return l; };
const count = (n) => n >= 1e6 ? (n / 1e6).toPrecision(3) + ' M' : n >= 1e4 ? (n / 1e3).toPrecision(3) + ' k' : String(n);
const bytes = (b) => { const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']; let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; } return (i ? b.toPrecision(3) : b) + ' ' + u[i]; };

// Processes carry the names the report gives them (process_names in
// src/analysis/timeline_pass.cc): "training loop (rank 0)", "DataLoader
// worker 1 (train, epoch 2)", the command.
const procName = (p) => p.name;

// Rows of levels 0..61 come as [first column, "one character per column"]
// (report_html.cc); decoded into an array of `n` levels.
const LEVELS = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const TOP_LEVEL = LEVELS.length - 1;
const levelOf = new Uint8Array(128);
for (let i = 0; i < LEVELS.length; i++) levelOf[LEVELS.charCodeAt(i)] = i;
const decodeLevels = (row, n) => {
  const out = new Uint8Array(n);
  const [first, text] = row;
  for (let i = 0; i < text.length && first + i < n; i++) out[first + i] = levelOf[text.charCodeAt(i)];
  return out;
};

// ---- the verdict, first -------------------------------------------------------
{
  const host = document.getElementById('verdict');
  const v = R.verdict;
  if (v) {
    host.appendChild(el('h2', 'Verdict: ' + v.bottleneck, 'verdict-' + v.bottleneck));
    host.appendChild(el('p', v.summary));
    if (v.advice && v.advice.length) {
      const ul = el('ul');
      v.advice.forEach((a) => { const li = el('li'); li.appendChild(el('b', '[' + a.rule + '] ')); li.append(a.text);
        if (a.at_stake_ns !== undefined)
          li.append(' (' + seconds(a.at_stake_ns / 1e9) + ' at stake, ' + Math.round(100 * a.at_stake_share) + '% of the run)');
        ul.appendChild(li); });
      host.appendChild(el('h3', 'Advice'));
      host.appendChild(ul);
    }
  }
  if (R.modes && R.modes.processes && R.modes.processes.length) {
    const m = Object.entries(R.modes.seconds_by_mode).map(([k, s]) => k + ' ' + seconds(s)).join(', ');
    host.appendChild(el('p', 'Recording modes (strata run --live): ' + m + '. Events cover the ' +
      seconds(R.modes.traced_s) + ' traced in full; counters cover every mode but off.'));
  }
}

// ---- the one-glance bar: where the run time went ---------------------------------
{
  expected++;
  const e = R.verdict && R.verdict.evidence;
  let label, parts;
  if (e && e.loop_ns > 0) {
    const wait = e.loader_wait_ns || 0, ckpt = e.checkpoint_ns || 0;
    label = 'training loop (pid ' + e.loop_pid + '), ' + seconds(e.loop_ns / 1e9);
    parts = [['compute', Math.max(0, e.loop_ns - wait - ckpt)], ['waiting for data', wait], ['checkpoint', ckpt]]
      .map(([k, ns]) => [k, 100 * ns / e.loop_ns]);
  } else {
    const s = R.summary || {};
    let span = 0;
    (R.processes || []).forEach((p) => { span += Math.max(0, p.last_ns - p.first_ns); });
    span = Math.max(span, 1);
    const io = s.unoverlapped_io_ns || 0, comp = s.compute_ns || 0, both = (s.io_ns || 0) - io;
    label = 'process time summed over ' + (s.processes || 0) + ' process(es), ' + seconds(span / 1e9);
    // Without compute regions compute is unknown: the rest is not called compute, nor 0% of it.
    parts = s.compute_measured === false ? [['I/O', s.io_ns || 0]] :
      [['I/O only', io], ['I/O overlapping compute', Math.max(0, both)], ['compute', Math.max(0, comp - both)]];
    parts.push([s.compute_measured === false ? 'other (compute not measured: no compute regions)' : 'other',
      Math.max(0, span - parts.reduce((t, x) => t + x[1], 0))]);
    parts = parts.map(([k, ns], i) => [k, 100 * ns / span, i === parts.length - 1 ? 3 : i]);
  }
  const c = document.getElementById('shares');
  drawBars(c, legendAfter(c), {categories: [label], horizontal: true, stacked: true, max: 100,
    valueTitle: '% of the time', valueText: (v) => String(Math.round(v)),
    series: parts.map(([k, pct, c], i) => ({label: k + ' ' + pct.toFixed(1) + '%', values: [pct],
      colour: palette[[2, 3, 1, 7][(c === undefined ? i : c) % 4]]}))});
  done();
}

// ---- heatmap: bytes (or operations) per process and time bin, every process ---------
{
  expected++;
  const canvas = document.getElementById('heat');
  const procs = D.procs;
  const rowH = Math.max(2, Math.min(16, Math.floor(640 / Math.max(1, procs.length))));
  const labelW = rowH >= 10 ? 280 : 0, width = 1000, plotW = width - labelW - 10, axisH = 28;
  canvas.width = width;
  canvas.height = procs.length * rowH + axisH;
  canvas.dataset.rows = procs.length;
  const g = canvas.getContext('2d');
  g.font = Math.min(12, rowH - 2) + 'px sans-serif';
  const total = D.bins * D.bin_s;
  // Pixels, not rectangles: 256 processes x 512 bins as fillRects cost half a second.
  const plotH = Math.max(1, procs.length * rowH);
  const img = g.createImageData(plotW, plotH);
  const buf = new Uint32Array(img.data.buffer);  // little-endian: 0xAABBGGRR
  // Epoch bands behind the rows (white elsewhere).
  const band = [0xfff8eee8, 0xfff4f4f4];
  const background = new Uint32Array(plotW).fill(0xffffffff);
  if (total > 0)
    D.epochs.forEach(([, from, to], i) => {
      for (let x = Math.max(0, Math.floor(from / total * plotW)); x < Math.min(plotW, Math.ceil(to / total * plotW)); x++)
        background[x] = band[i % 2];
    });
  for (let y = 0; y < plotH; y++) buf.set(background, y * plotW);
  const hsl = (h, s, l) => { const a = s * Math.min(l, 1 - l), f = (n) => { const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1)))); };
    return (255 << 24 | f(4) << 16 | f(8) << 8 | f(0)) >>> 0; };
  const colourOf = Array.from({length: TOP_LEVEL + 1}, (_, v) => hsl(220 - 220 * v / TOP_LEVEL, 0.85, (70 - 35 * v / TOP_LEVEL) / 100));
  const px = StrataTimeline.pixelColumns(0, Math.max(1, D.bins), plotW, 1, Math.max(1, D.bins));
  procs.forEach((p, r) => {
    const lv = StrataTimeline.pixelLevels(decodeLevels(p.heat, D.bins), px);
    const y1 = r * rowH + rowH - (rowH > 3 ? 1 : 0);
    for (let x = 0; x < plotW; x++) {
      if (!lv[x]) continue;
      for (let y = r * rowH; y < y1; y++) buf[y * plotW + x] = colourOf[lv[x]];
    }
  });
  g.putImageData(img, labelW, 0);
  if (labelW) {
    g.fillStyle = '#222';
    procs.forEach((p, r) => g.fillText(procName(p).slice(0, 42), 2, r * rowH + rowH - 3));
  }
  g.fillStyle = '#222';
  g.font = '11px sans-serif';  // the row labels' size shrinks with the rows; the axis's does not
  const y = procs.length * rowH + 16;
  for (let i = 0; i <= 4; i++) g.fillText((total * i / 4).toFixed(2) + ' s', labelW + plotW * i / 4 - (i ? 30 : 0), y);
  g.fillText('max ' + (D.sizes_known ? bytes(D.heat_max) : D.heat_max + ' ops') + ' per ' + seconds(D.bin_s) + ' bin',
    width - 240, y + 10);
  done();
}

// ---- timeline of every process: what it was doing, zoomable ---------------------------
{
  expected++;
  drawTimeline();
  done();
  // What the first screen shows (verdict, the bar, heatmap, timeline) is drawn: the time since navigation.
  document.body.dataset.firstScreenMs = Math.round(performance.now());
}

// ---- the critical path of every training loop (one per rank) ------------------------------
// Per loop: its time split into compute, waiting for a batch (split by what
// its loader workers were doing meanwhile, in proportion), starting/stopping
// workers and checkpoints; the table has the figures (critical_path in --json).
if (D.paths && D.paths.length) {
  const host = document.getElementById('paths');
  host.appendChild(el('h2', 'Critical path of each training loop (' + D.paths.length + (D.paths.length > 1 ? ' loops, one per rank)' : ' loop)')));
  host.appendChild(el('p', 'Share of each loop\'s time; the wait for a batch is split by what that loop\'s own loader ' +
    'workers did during it (reading, CPU in a batch, idle).', 'hint'));
  const div = el('div', undefined, 'chart');
  const pathsHeight = Math.max(110, Math.min(640, 60 + 22 * D.paths.length));
  div.style.height = pathsHeight + 'px';
  const c = el('canvas'); c.id = 'paths-chart'; div.appendChild(c); host.appendChild(div);
  const t = el('table'); t.id = 'paths-table';
  const head = el('tr');
  ['loop', 'loop time', 'waited', 'start/stop', 'checkpoint', 'workers', 'while waiting: reading', 'CPU', 'idle',
    'reads hidden'].forEach((h) => head.appendChild(el('th', h)));
  t.appendChild(head);
  const pc = (x) => (100 * x).toFixed(1) + '%';
  D.paths.forEach((p) => {
    const tr = el('tr');
    [p.label, seconds(p.loop_ns / 1e9), pc(p.wait_ns / Math.max(1, p.loop_ns)),
      pc((p.startup_ns + p.shutdown_ns) / Math.max(1, p.loop_ns)), pc(p.checkpoint_ns / Math.max(1, p.loop_ns)),
      p.loaders === 'loop' ? 'none (num_workers=0)' : String(p.workers), pc(p.read_share), pc(p.cpu_share),
      p.loaders === 'loop' ? '-' : pc(p.idle_share), p.worker_read_ns > 0 ? pc(p.hidden_share) : '-']
      .forEach((x) => tr.appendChild(el('td', x)));
    t.appendChild(tr);
  });
  host.appendChild(t);
  later(div, () => {
    const parts = [
      ['compute', (p) => p.compute_ns, 2],
      ['waiting, workers reading', (p) => p.next_ns * p.read_share, 0],
      ['waiting, workers on CPU', (p) => p.next_ns * p.cpu_share, 1],
      ['waiting, workers idle', (p) => p.next_ns * (1 - p.read_share - p.cpu_share), 3],
      ['starting/stopping workers', (p) => p.startup_ns + p.shutdown_ns, 7],
      ['checkpoint', (p) => p.checkpoint_ns, 4]];
    drawBars(c, legendAfter(c), {categories: D.paths.map((p) => p.label), horizontal: true, stacked: true, max: 100,
      height: pathsHeight,
      valueTitle: '% of the loop\'s time', valueText: (v) => String(Math.round(v)),
      series: parts.map(([label, ns, colour]) => ({label, colour: palette[colour],
        values: D.paths.map((p) => Math.max(0, 100 * ns(p) / Math.max(1, p.loop_ns)))}))});
    c.dataset.loops = D.paths.length;
  });
}

// ---- per epoch (or --by key): I/O, compute, loader wait ------------------------------
document.getElementById('groups-title').textContent = 'Time per ' + D.by + ' (summed over processes)';
later(document.getElementById('groups').parentElement, () => {
  const hasWait = D.groups.some((x) => x[3] > 0);
  const c = document.getElementById('groups');
  const series = [{label: 'I/O time', values: D.groups.map((x) => x[1]), colour: palette[0]}];
  if (!R.summary || R.summary.compute_measured !== false)  // unknown is not 0
    series.push({label: 'compute time', values: D.groups.map((x) => x[2]), colour: palette[2]});
  if (hasWait) series.push({label: 'loader wait', values: D.groups.map((x) => x[3]), colour: palette[3]});
  drawBars(c, legendAfter(c), {categories: D.groups.map((x) => x[0]), series, categoryTitle: D.by,
    valueTitle: 'seconds', valueText: (v) => v === 0 ? '0' : v.toPrecision(3).replace(/\.?0+$/, '')});
});

// ---- operation counts -----------------------------------------------------------------
later(document.getElementById('ops').parentElement, () => {
  const top = [...(R.functions || [])].sort((a, b) => b.count - a.count).slice(0, 12);
  const c = document.getElementById('ops');
  drawBars(c, legendAfter(c), {categories: top.map((f) => f.layer + ' ' + f.name), horizontal: true, valueTitle: 'calls',
    valueText: count, series: [{label: 'calls', values: top.map((f) => f.count), colour: palette[4]}]});
});

// ---- access sizes (Darshan buckets) ------------------------------------------------------
later(document.getElementById('sizes').parentElement, () => {
  const labels = ['0-100', '100-1K', '1K-10K', '10K-100K', '100K-1M', '1M-4M', '4M-10M', '10M-100M', '100M-1G', '1G+'];
  const c = document.getElementById('sizes');
  drawBars(c, legendAfter(c), {categories: labels, categoryTitle: 'request size (bytes)',
    valueTitle: D.sizes_known ? 'requests' : 'sizes unknown', valueText: count,
    series: [{label: 'reads', values: D.sizes_r, colour: palette[0]}, {label: 'writes', values: D.sizes_w, colour: palette[1]}]});
});

// ---- files by access ----------------------------------------------------------------------
later(document.getElementById('access').parentElement, () => {
  const kinds = ['read-only', 'write-only', 'read-write', 'metadata-only'];
  const c = document.getElementById('access');
  drawBars(c, legendAfter(c), {categories: kinds, valueTitle: 'files', valueText: count,
    series: [{label: 'files', values: kinds.map((k) => D.access[k] || 0), colour: palette[5]}]});
});

// ---- staging advice (with --stage-capacity) ---------------------------------------------
if (R.staging && R.staging.groups) {
  const host = document.getElementById('staging');
  host.appendChild(el('h2', 'Staging advice: ' + bytes(R.staging.used) + ' of ' + bytes(R.staging.capacity) +
    ' used, ' + seconds(R.staging.saved_ns / 1e9) + ' of read time saved'));
  const t = el('table');
  t.id = 'staging-table';
  const head = el('tr');
  ['directory or file', 'files', 'size', 'read time', 're-read', 'saved'].forEach((h) => head.appendChild(el('th', h)));
  t.appendChild(head);
  R.staging.groups.forEach((g) => {
    const tr = el('tr');
    [g.dir || g.path, g.files, bytes(g.size), seconds(g.read_ns / 1e9), g.reread.toFixed(2) + 'x',
      g.reason ? g.reason : seconds(g.saved_ns / 1e9)].forEach((x) => tr.appendChild(el('td', String(x))));
    t.appendChild(tr);
  });
  host.appendChild(t);
}

// ---- spatial and temporal patterns of the data set and checkpoint files ---------------
// Drawn on a canvas (web/report_plots.js), colour = request size in 8
// log-scale classes; the legend below each plot is the colour scale.
{
  const host = document.getElementById('patterns');
  D.files.forEach((f, i) => {
    for (const kind of ['spatial', 'temporal']) {
      host.appendChild(el('h2', (kind === 'spatial' ? 'Spatial pattern (offset by process): '
        : 'Temporal pattern (offset over time): ') + f.path));
      const shown = f.points.length < f.samples ? f.points.length + ' of ' + f.samples + ' sampled accesses, evenly spaced; '
        : f.points.length + ' sampled accesses; ';
      host.appendChild(el('p', shown + 'colour: request size, blue small to red large', 'hint'));
      const div = el('div', undefined, 'chart');
      const c = el('canvas'); c.id = kind + i; div.appendChild(c); host.appendChild(div);
      const legend = el('div', undefined, 'plot-legend');
      host.appendChild(legend);
      later(div, () => drawPattern(c, legend, f, kind, bytes));
    }
  });
}
document.body.dataset.chartsExpected = expected;
startLazyViews();
