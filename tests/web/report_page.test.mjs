// The report page of `strata analyze --html` in headless Chromium
// (playwright-core from web/node_modules): every view drawn and labelled, no
// series left out, the timeline's rows named and zoomable, no console output,
// no request but the page itself.
//
//   node report_page.test.mjs --page r.html --processes N [--name "training loop" ...]
//                             [--loops N] [--chromium /usr/bin/chromium]
// --loops: the training loops whose critical path the page must draw (one per rank).
//
// Prints `ok -` / `not ok -` per check; exit 1 on any failure.
import {createRequire} from 'node:module';
import path from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', '..', 'web', 'package.json'));
const {chromium} = require('playwright-core');

const opts = {chromium: '/usr/bin/chromium', names: []};
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, ''), v = process.argv[i + 1];
  if (k === 'name') opts.names.push(v);
  else opts[k] = v;
}
let failures = 0;
const check = (what, ok, detail) => {
  console.log((ok ? 'ok - ' : 'not ok - ') + what + (ok || detail === undefined ? '' : ': ' + JSON.stringify(detail)));
  if (!ok) failures++;
};

const browser = await chromium.launch({executablePath: opts.chromium, args: ['--no-sandbox']});
try {
  const page = await browser.newPage({viewport: {width: 1300, height: 1000}});
  const consoleLines = [], foreign = [];
  page.on('console', (m) => consoleLines.push(m.type() + ': ' + m.text()));
  page.on('pageerror', (e) => consoleLines.push('pageerror: ' + e.message));
  const url = pathToFileURL(path.resolve(opts.page)).href;
  page.on('request', (r) => { if (r.url() !== url) foreign.push(r.url()); });
  await page.goto(url);
  // Charts below the first screen are drawn one task each: wait for the count to settle.
  await page.waitForFunction(() => document.body.dataset.chartsExpected !== undefined &&
    document.body.dataset.chartsDrawn === document.body.dataset.chartsExpected, null, {timeout: 20000}).catch(() => {});

  // 1. every view drawn: the count, and pixels on every canvas
  const body = await page.evaluate(() => ({drawn: Number(document.body.dataset.chartsDrawn),
    expected: Number(document.body.dataset.chartsExpected), canvases: document.querySelectorAll('canvas').length}));
  check('every view drawn (' + body.drawn + ' of ' + body.expected + ')', body.drawn === body.expected && body.expected >= 8, body);
  check('one canvas per view', body.canvases === body.expected, body);
  const blank = await page.evaluate(() => [...document.querySelectorAll('canvas')].filter((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 3; i < d.length; i += 4) if (d[i] !== 0 && (d[i - 1] !== 255 || d[i - 2] !== 255 || d[i - 3] !== 255)) return false;
    return true;
  }).map((c) => c.id));
  check('no canvas is blank', blank.length === 0, blank);

  // 2. labelled: every view has a heading with text
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('canvas')].filter((c) => {
    let e = c.closest('div');
    while (e && e.tagName !== 'H2') e = e.previousElementSibling;
    return !e || !e.textContent.trim();
  }).map((c) => c.id));
  check('every view has a heading', unlabelled.length === 0, unlabelled);

  // 2b. no series dropped: every pattern point drawn, a legend entry per size
  // class and per bar series; the critical path of every loop
  const series = await page.evaluate(() => [...document.querySelectorAll('canvas')].filter((c) => c.dataset.series !== undefined)
    .map((c) => ({id: c.id, series: Number(c.dataset.series), points: c.dataset.points, pointsDrawn: c.dataset.pointsDrawn,
      legend: c.parentElement.nextElementSibling && c.parentElement.nextElementSibling.classList.contains('plot-legend')
        ? [...c.parentElement.nextElementSibling.querySelectorAll('.legend-item')].map((e) => e.textContent) : []})));
  const charts = series.filter((c) => !['heat', 'timeline'].includes(c.id));
  check('every chart has a legend entry per series (' + charts.length + ' charts)',
    charts.length === body.expected - 2 && charts.every((c) => c.series >= 1 && c.legend.length === c.series), charts);
  const patterns = series.filter((c) => c.points !== undefined);
  check('patterns: every sampled point drawn (' + patterns.length + ' plots)',
    patterns.every((c) => Number(c.points) > 0 && c.points === c.pointsDrawn), patterns);
  const paths = await page.evaluate(() => ({rows: document.querySelectorAll('#paths-table tr').length - 1,
    bars: Number((document.getElementById('paths-chart') || {dataset: {}}).dataset.loops || 0),
    labels: [...document.querySelectorAll('#paths-table tr td:first-child')].map((e) => e.textContent)}));
  if (opts.loops !== undefined)
    check('critical path: a bar and a table row per training loop (' + paths.rows + ')',
      paths.rows === Number(opts.loops) && paths.bars === Number(opts.loops), paths);

  // 3. the timeline: a row per process, named; every lane with data drawn
  const tl = await page.evaluate(() => {
    const c = document.getElementById('timeline');
    return {rows: Number(c.dataset.rows), names: JSON.parse(c.dataset.rowNames), expected: Number(c.dataset.lanesExpected),
      drawn: Number(c.dataset.lanesDrawn), t0: Number(c.dataset.t0), t1: Number(c.dataset.t1),
      legend: [...document.querySelectorAll('#timeline-legend .legend-item')].map((e) => e.textContent),
      kinds: Number(c.dataset.laneKinds),
      heatRows: Number(document.getElementById('heat').dataset.rows)};
  });
  check('timeline: a row per process (' + tl.rows + ')', tl.rows === Number(opts.processes), tl.rows);
  check('heatmap: a row per process', tl.heatRows === Number(opts.processes), tl.heatRows);
  check('timeline: names are unique', new Set(tl.names).size === tl.names.length, tl.names);
  for (const n of opts.names) check('timeline: a row named "' + n + '"', tl.names.includes(n), tl.names);
  check('timeline: every lane with data drawn (' + tl.drawn + ' of ' + tl.expected + ')', tl.expected > 0 && tl.drawn === tl.expected, tl);
  check('timeline: a legend entry per kind of lane drawn (' + tl.kinds + ')', tl.kinds >= 1 && tl.legend.length === tl.kinds, tl);

  // 4. zoom and pan
  await page.evaluate(() => document.getElementById('timeline').scrollIntoView({block: 'start'}));  // its top rows in view
  const box = await page.locator('#timeline').boundingBox();
  const view = () => page.evaluate(() => { const c = document.getElementById('timeline');
    return [Number(c.dataset.t0), Number(c.dataset.t1), Number(c.dataset.lanesDrawn)]; });
  await page.mouse.move(box.x + 290 + (box.width - 300) / 2, box.y + 30);
  await page.mouse.wheel(0, -100);
  await page.mouse.wheel(0, -100);
  const zoomed = await view();
  const span0 = tl.t1 - tl.t0, span1 = zoomed[1] - zoomed[0];
  check('wheel zooms in around the cursor (span ' + span0.toPrecision(3) + ' -> ' + span1.toPrecision(3) + ' s)',
    Math.abs(span1 - span0 * 0.64) < span0 * 1e-6 && zoomed[0] > tl.t0 && zoomed[1] < tl.t1, zoomed);
  await page.mouse.move(box.x + 600, box.y + 30);
  await page.mouse.down();
  await page.mouse.move(box.x + 500, box.y + 30, {steps: 4});
  await page.mouse.up();
  const panned = await view();
  check('drag pans by the distance dragged', panned[0] > zoomed[0] && Math.abs((panned[1] - panned[0]) - span1) < span1 * 1e-6, panned);
  const tip = await page.locator('#timeline-tip').textContent();
  check('hovering a row names it', tl.names.some((n) => tip.startsWith(n + ', pid ')), tip);
  await page.click('#tl-in');
  const halved = await view();
  check('"zoom in" halves the span', Math.abs((halved[1] - halved[0]) - span1 / 2) < span1 * 1e-6, halved);
  await page.locator('#timeline').dblclick({position: {x: 400, y: 30}});
  const whole = await view();
  check('double-click shows the whole run again, every lane drawn', whole[0] === tl.t0 && whole[1] === tl.t1 && whole[2] === tl.expected, whole);

  // 5. quiet and self-contained
  check('no console output or page error', consoleLines.length === 0, consoleLines);
  check('no request but the page', foreign.length === 0, foreign);
} finally {
  await browser.close();
}
console.log(JSON.stringify({failures}));
process.exit(failures ? 1 : 0);
