// The report page's cost in headless Chromium: its size, the time from
// navigation to the first screen drawn (verdict, bar, heatmap, timeline:
// body[data-first-screen-ms], the page's clock) and to every view drawn
// (body[data-charts-drawn] reaching data-charts-expected), best and median
// of 5 loads, with the page's own script time (CDP Performance metrics)
// and the timeline's zoom redraw.
//
//   node bench/report_page.mjs --page r.html [--loads 5] [--label "256 processes"] [--chromium /usr/bin/chromium]
//
// A report, not a test: it exits 0 whatever the figures (bench/report_page.sh).
import {statSync} from 'node:fs';
import {createRequire} from 'node:module';
import path from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'web', 'package.json'));
const {chromium} = require('playwright-core');

const opts = {loads: 5, chromium: '/usr/bin/chromium'};
for (let i = 2; i < process.argv.length; i += 2) opts[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const bytes = statSync(opts.page).size;
const url = pathToFileURL(path.resolve(opts.page)).href;
const browser = await chromium.launch({executablePath: opts.chromium, args: ['--no-sandbox']});
const draws = [], scripts = [], firsts = [];
let zoom = null, views = '', errors = [];
try {
  for (let i = 0; i < Number(opts.loads); i++) {
    const page = await browser.newPage({viewport: {width: 1300, height: 1000}});
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    const t0 = Date.now();
    await page.goto(url, {waitUntil: 'commit'});
    await page.waitForFunction(() => document.body && document.body.dataset.chartsExpected !== undefined &&
      document.body.dataset.chartsDrawn === document.body.dataset.chartsExpected, null, {timeout: 60000, polling: 10});
    draws.push(Date.now() - t0);
    firsts.push(Number(await page.evaluate(() => document.body.dataset.firstScreenMs)));
    const m = Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((x) => [x.name, x.value]));
    scripts.push(m.ScriptDuration * 1000);
    if (i === 0) {
      views = await page.evaluate(() => document.body.dataset.chartsDrawn + ' views, timeline ' +
        document.getElementById('timeline').dataset.rows + ' rows, ' + document.getElementById('timeline').dataset.lanesDrawn + '/' +
        document.getElementById('timeline').dataset.lanesExpected + ' lanes drawn');
      zoom = await page.evaluate(() => { const t = performance.now(); document.getElementById('tl-in').click();
        return performance.now() - t; });
    }
    await page.close();
  }
} finally {
  await browser.close();
}
const sorted = (v) => [...v].sort((a, b) => a - b);
const med = (v) => sorted(v)[Math.floor(v.length / 2)];
console.log('page: ' + bytes + ' bytes (' + (bytes / 1048576).toFixed(2) + ' MiB); ' + views);
console.log('first screen drawn (verdict, bar, heatmap, timeline; page clock from navigation): best ' + sorted(firsts)[0] +
            ' ms, median ' + med(firsts) + ' ms');
console.log('every view drawn (navigation to the last chart): best ' + sorted(draws)[0] + ' ms, median ' + med(draws) +
            ' ms over ' + draws.length + ' loads; script ' + med(scripts).toFixed(0) + ' ms; zoom redraw ' + zoom.toFixed(1) + ' ms');
if (errors.length) console.log('page errors: ' + errors.join(' | '));
const label = opts.label || path.basename(opts.page);
const row = (what, value, budget, ok) => console.log('| ' + label + ' | ' + what + ' | ' + value + ' | ' + budget + ' | ' +
                                                     (ok ? 'ok' : 'MISSED') + ' |');
row('page size', (bytes / 1e6).toFixed(2) + ' MB', '< 5 MB', bytes < 5e6);
row('first draw: first screen (median)', med(firsts) + ' ms', '< 2000 ms', med(firsts) < 2000);
row('every view drawn (median)', med(draws) + ' ms', '< 2000 ms', med(draws) < 2000);
