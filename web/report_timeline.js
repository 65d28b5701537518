// The report page's timeline of every process (strata analyze --html),
// embedded before web/report.js. The page's data `D` carries, per process,
// one row of levels (0..61: share of a column's time) per lane: I/O calls,
// waiting for the loader, producing a batch, compute, checkpoints, in columns
// of D.col_s seconds (src/analysis/timeline_pass.cc). Drawing puts pixels,
// one per screen column: each pixel shows the busiest column under it, so
// hundreds of processes cost the same as a few and nothing is left out at
// any zoom. Zoom: wheel (around the cursor), the buttons; pan: drag;
// double-click: the whole run. The canvas reports what it drew in its data-*
// attributes (rows, lanes expected and drawn, the time shown) for tests.
const StrataTimeline = {
  LANES: [
    {key: 'wait', label: 'waiting for data (dataloader.next / iter)', rgb: [214, 39, 40]},
    {key: 'compute', label: 'compute', rgb: [44, 160, 44]},
    {key: 'checkpoint', label: 'checkpoint (torch.save / load)', rgb: [148, 103, 189]},
    {key: 'batch', label: 'producing a batch (dataloader.batch)', rgb: [255, 127, 14]},
    {key: 'io', label: 'I/O calls (POSIX, STDIO)', rgb: [31, 119, 180]},
  ],

  // The columns under each of `width` pixels showing [t0, t1) seconds:
  // from[x]..to[x] inclusive, or from[x] > to[x] when none.
  pixelColumns(t0, t1, width, colS, cols) {
    const from = new Int32Array(width), to = new Int32Array(width);
    const perPx = (t1 - t0) / width;
    for (let x = 0; x < width; x++) {
      const a = t0 + x * perPx, b = a + perPx;
      // 1e-9 of a column: 0.3 / 0.1 is 2.9999999999999996 in floating point.
      from[x] = Math.min(cols - 1, Math.max(0, Math.floor(a / colS + 1e-9)));
      to[x] = Math.min(cols - 1, Math.max(from[x], Math.ceil(b / colS - 1e-9) - 1));
    }
    return {from, to};
  },

  // The highest level among the columns under each pixel.
  pixelLevels(levels, px) {
    const out = new Uint8Array(px.from.length);
    for (let x = 0; x < out.length; x++) {
      let m = 0;
      for (let c = px.from[x]; c <= px.to[x]; c++) if (levels[c] > m) m = levels[c];
      out[x] = m;
    }
    return out;
  },

  // A new view [t0, t1) after zooming by `factor` (< 1: in) around time `at`,
  // kept inside the run and no narrower than `minSpan`.
  zoom(view, factor, at, total, minSpan) {
    const span = Math.min(total, Math.max(minSpan, (view[1] - view[0]) * factor));
    let t0 = at - (at - view[0]) * span / (view[1] - view[0]);
    t0 = Math.min(Math.max(0, t0), total - span);
    return [t0, t0 + span];
  },

  pan(view, dt, total) {
    const span = view[1] - view[0];
    const t0 = Math.min(Math.max(0, view[0] + dt), total - span);
    return [t0, t0 + span];
  },

  // Tick step (seconds) giving about `n` ticks over `span`.
  tickStep(span, n) {
    const raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
    return [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw) || raw;
  },

  timeText(s, step) {
    const digits = Math.max(0, -Math.floor(Math.log10(step)));
    return s.toFixed(Math.min(9, digits)) + ' s';
  },
};

if (typeof module !== 'undefined') module.exports = StrataTimeline;

function drawTimeline() {
  const TL = StrataTimeline;
  const canvas = document.getElementById('timeline');
  const tip = document.getElementById('timeline-tip');
  const range = document.getElementById('tl-range');
  const cols = Math.max(1, D.cols), colS = D.col_s, total = cols * colS;
  // Rows: every process; its lanes in the fixed order of TL.LANES, only those it used.
  const rows = D.procs.map((p) => ({name: p.name, pid: p.pid,
    lanes: TL.LANES.filter((l) => p.lanes[l.key]).map((l) => ({lane: l, levels: decodeLevels(p.lanes[l.key], cols)}))}));
  const lanesExpected = rows.reduce((n, r) => n + r.lanes.length, 0);
  const legend = document.getElementById('timeline-legend');
  const kinds = TL.LANES.filter((l) => rows.some((r) => r.lanes.some((x) => x.lane === l)));
  canvas.dataset.laneKinds = kinds.length;
  kinds.forEach((l) => {
    const item = el('span', undefined, 'legend-item');
    const sw = el('span', undefined, 'swatch');
    sw.style.background = 'rgb(' + l.rgb.join(',') + ')';
    item.append(sw, l.label);
    legend.appendChild(item);
  });
  legend.appendChild(el('span', 'darker: more of the column busy; bands: epochs', 'hint'));

  const width = 1000, labelW = 290, plotW = width - labelW - 10, top = 22, bottom = 24;
  const rowH = Math.max(4, Math.min(24, Math.floor(720 / Math.max(1, rows.length))));
  const plotH = rows.length * rowH;
  canvas.width = width;
  canvas.height = top + plotH + bottom;
  canvas.dataset.rows = rows.length;
  canvas.dataset.rowNames = JSON.stringify(rows.map((r) => r.name));
  canvas.dataset.lanesExpected = lanesExpected;
  canvas.setAttribute('aria-label', 'timeline of ' + rows.length + ' processes');
  const g = canvas.getContext('2d');
  const minSpan = Math.min(total, 4 * colS);
  let view = [0, total];

  const bandAt = new Int16Array(plotW);
  const rgba = (r, gg, b) => (255 << 24 | b << 16 | gg << 8 | r) >>> 0;
  // Each lane's colour per level, computed once (little-endian: 0xAABBGGRR).
  const shade = (lane) => Uint32Array.from({length: TOP_LEVEL + 1}, (_, v) => {
    const a = 0.3 + 0.7 * v / TOP_LEVEL, mix = (c) => Math.round(255 - a * (255 - c));
    return rgba(mix(lane.rgb[0]), mix(lane.rgb[1]), mix(lane.rgb[2]));
  });
  const shades = new Map(TL.LANES.map((l) => [l, shade(l)]));
  const bandColour = [rgba(232, 238, 248), rgba(244, 244, 244)];
  const white = rgba(255, 255, 255);
  const img = g.createImageData(plotW, Math.max(1, plotH));
  const buf = new Uint32Array(img.data.buffer);
  const draw = () => {
    const px = TL.pixelColumns(view[0], view[1], plotW, colS, cols);
    // Epoch bands behind the rows: one background row, copied down.
    const perPx = (view[1] - view[0]) / plotW;
    bandAt.fill(-1);
    D.epochs.forEach(([, from, to], i) => {
      const a = Math.max(0, Math.floor((from - view[0]) / perPx)), b = Math.min(plotW, Math.ceil((to - view[0]) / perPx));
      for (let x = a; x < b; x++) bandAt[x] = i;
    });
    for (let x = 0; x < plotW; x++) buf[x] = bandAt[x] < 0 ? white : bandColour[bandAt[x] % 2];
    for (let y = 1; y < plotH; y++) buf.copyWithin(y * plotW, 0, plotW);
    let lanesDrawn = 0;
    rows.forEach((row, r) => {
      const n = row.lanes.length;
      const inner = rowH - (rowH > 5 ? 1 : 0);
      row.lanes.forEach(({lane, levels}, k) => {
        const y0 = r * rowH + Math.floor(k * inner / n), y1 = Math.max(r * rowH + Math.floor((k + 1) * inner / n), y0 + 1);
        const lv = TL.pixelLevels(levels, px), colour = shades.get(lane);
        let any = false;
        for (let x = 0; x < plotW; x++) {
          if (!lv[x]) continue;
          any = true;
          buf[y0 * plotW + x] = colour[lv[x]];
        }
        // The lane's other pixel rows repeat its first.
        for (let y = y0 + 1; y < y1; y++) buf.copyWithin(y * plotW, y0 * plotW, y0 * plotW + plotW);
        if (any) lanesDrawn++;
      });
    });
    g.clearRect(0, 0, width, canvas.height);
    g.putImageData(img, labelW, top);
    // Labels, epoch names, time axis.
    g.fillStyle = '#222';
    if (rowH >= 9) {
      g.font = Math.min(12, rowH - 2) + 'px sans-serif';
      rows.forEach((row, r) => g.fillText(row.name.slice(0, 46), 2, top + r * rowH + rowH - 3));
    }
    g.font = '11px sans-serif';
    D.epochs.forEach(([name, from, to]) => {
      const a = Math.max(view[0], from), b = Math.min(view[1], to);
      if (b <= a) return;
      const x = labelW + (a - view[0]) / perPx;
      if ((b - a) / perPx > 40) g.fillText('epoch ' + name, x + 2, top - 6);
    });
    const step = TL.tickStep(view[1] - view[0], 6);
    for (let t = Math.ceil(view[0] / step) * step; t <= view[1] + 1e-12; t += step) {
      const x = labelW + (t - view[0]) / perPx;
      g.fillRect(x, top + plotH, 1, 4);
      g.fillText(TL.timeText(t, step), Math.min(x - 12, width - 70), top + plotH + 16);
    }
    canvas.dataset.t0 = view[0];
    canvas.dataset.t1 = view[1];
    canvas.dataset.lanesDrawn = lanesDrawn;
    range.textContent = 'showing ' + seconds(view[0]) + ' to ' + seconds(view[1]) + ' of ' + seconds(total);
  };

  const timeAt = (clientX) => {
    const x = clientX - canvas.getBoundingClientRect().left - labelW;
    return view[0] + Math.min(Math.max(0, x), plotW) / plotW * (view[1] - view[0]);
  };
  const zoomBy = (factor, at) => { view = TL.zoom(view, factor, at, total, minSpan); draw(); };
  canvas.addEventListener('wheel', (e) => { e.preventDefault(); zoomBy(e.deltaY < 0 ? 0.8 : 1.25, timeAt(e.clientX)); },
    {passive: false});
  let dragX = null;
  canvas.addEventListener('mousedown', (e) => { dragX = e.clientX; });
  window.addEventListener('mouseup', () => { dragX = null; });
  canvas.addEventListener('mousemove', (e) => {
    if (dragX !== null) {
      view = TL.pan(view, -(e.clientX - dragX) / plotW * (view[1] - view[0]), total);
      dragX = e.clientX;
      draw();
    }
    const y = e.clientY - canvas.getBoundingClientRect().top - top, r = Math.floor(y / rowH);
    if (r < 0 || r >= rows.length) { tip.textContent = ''; return; }
    const t = timeAt(e.clientX), c = Math.min(cols - 1, Math.floor(t / colS));
    const busy = rows[r].lanes.filter((l) => l.levels[c]).map((l) => l.lane.key + ' ' +
      Math.round(100 * l.levels[c] / TOP_LEVEL) + '%');
    tip.textContent = rows[r].name + ', pid ' + rows[r].pid + ', at ' + seconds(t) + ': ' +
      (busy.length ? busy.join(', ') : 'idle') + ' (of a ' + seconds(colS) + ' column)';
  });
  canvas.addEventListener('dblclick', () => { view = [0, total]; draw(); });
  const centre = () => (view[0] + view[1]) / 2;
  document.getElementById('tl-in').addEventListener('click', () => zoomBy(0.5, centre()));
  document.getElementById('tl-out').addEventListener('click', () => zoomBy(2, centre()));
  document.getElementById('tl-reset').addEventListener('click', () => { view = [0, total]; draw(); });
  draw();
}
