// The report page's charts (strata analyze --html), embedded into the page
// at build time (src/analysis/CMakeLists.txt). The page defines `D`, the
// report's data, before this script; Chart.js comes before both.
let drawn = 0;
const done = (c) => { drawn++; document.body.dataset.chartsDrawn = drawn; };
Chart.defaults.animation = false;
const palette = ['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b','#e377c2','#7f7f7f'];
{
  const n = D.timeline.length ? D.timeline[0].ops.length : 0;
  const labels = Array.from({length: n}, (_, i) => (i * D.bin_s).toFixed(3));
  const ds = [];
  D.timeline.forEach((p, k) => {
    ds.push({label: 'ops pid ' + p.pid, data: p.ops, borderColor: palette[k % 8], yAxisID: 'ops', pointRadius: 0});
    if (D.sizes_known) ds.push({label: 'MB/s pid ' + p.pid, data: p.rbytes.map((b, i) => (b + p.wbytes[i]) / D.bin_s / 1e6),
      borderColor: palette[k % 8], borderDash: [4, 3], yAxisID: 'bw', pointRadius: 0});
  });
  new Chart(document.getElementById('timeline'), {type: 'line', data: {labels, datasets: ds},
    options: {maintainAspectRatio: false, scales: {x: {title: {display: true, text: 'time (s)'}},
      ops: {position: 'left', title: {display: true, text: 'ops / bin'}},
      bw: {position: 'right', display: D.sizes_known, title: {display: true, text: 'MB/s'}}}}});
  done();
}
{
  const labels = ['0-100','100-1K','1K-10K','10K-100K','100K-1M','1M-4M','4M-10M','10M-100M','100M-1G','1G+'];
  new Chart(document.getElementById('sizes'), {type: 'bar', data: {labels, datasets: [
    {label: 'reads', data: D.sizes_r, backgroundColor: palette[0]},
    {label: 'writes', data: D.sizes_w, backgroundColor: palette[1]}]},
    options: {maintainAspectRatio: false, scales: {y: {title: {display: true, text: D.sizes_known ? 'count' : 'sizes unknown'}}}}});
  done();
}
{
  new Chart(document.getElementById('epochs'), {type: 'bar', data: {labels: D.epochs.map(e => e[0]), datasets: [
    {label: 'I/O time (s)', data: D.epochs.map(e => e[1]), backgroundColor: palette[0]},
    {label: 'compute time (s)', data: D.epochs.map(e => e[2]), backgroundColor: palette[2]}]},
    options: {maintainAspectRatio: false}});
  done();
}
const host = document.getElementById('patterns');
const colour = (size, max) => { const t = max > 0 ? Math.log1p(size) / Math.log1p(max) : 0;
  return 'hsl(' + Math.round(240 - 240 * t) + ',80%,45%)'; };
D.files.forEach((f, i) => {
  const maxSize = Math.max(1, ...f.points.map(p => p[2]));
  for (const kind of ['spatial', 'temporal']) {
    const h = document.createElement('h2');
    h.textContent = (kind === 'spatial' ? 'Spatial pattern (offset by process): ' : 'Temporal pattern (offset over time): ') + f.path;
    host.appendChild(h);
    const div = document.createElement('div'); div.className = 'chart';
    const c = document.createElement('canvas'); c.id = kind + i; div.appendChild(c); host.appendChild(div);
    const pts = f.points.map(p => ({x: kind === 'spatial' ? p[3] : p[0], y: p[1]}));
    new Chart(c, {type: 'scatter', data: {datasets: [{label: 'accesses (colour: request size)', data: pts,
      pointBackgroundColor: f.points.map(p => colour(p[2], maxSize)), pointRadius: 2}]},
      options: {maintainAspectRatio: false, scales: {x: {title: {display: true, text: kind === 'spatial' ? 'pid' : 'time (s)'}},
        y: {title: {display: true, text: 'file offset (B)'}}}}});
    done();
  }
});
document.body.dataset.chartsExpected = 3 + 2 * D.files.length;
