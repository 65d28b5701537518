// What the live page costs the browser and asks of the server: starts
// tests/web/live_workload.py under `strata run --live`, opens the page in
// headless Chromium (playwright-core from web/node_modules) for SECONDS, and
// prints the page's size, the time to its first task rows, the requests per
// second by endpoint, and the renderer's main-thread time per second (CDP
// Performance metrics: TaskDuration, ScriptDuration, LayoutDuration).
//
//   node bench/live_page.mjs [--seconds 30] [--build build] [--chromium /usr/bin/chromium]
//
// A report, not a test: it exits 0 whatever the figures.
import {spawn} from 'node:child_process';
import {existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync} from 'node:fs';
import {createRequire} from 'node:module';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.dirname(here);
const require = createRequire(path.join(repo, 'web', 'package.json'));
const {chromium} = require('playwright-core');

const opts = {seconds: 30, build: path.join(repo, 'build'), chromium: '/usr/bin/chromium'};
for (let i = 2; i < process.argv.length; i += 2) opts[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const seconds = Number(opts.seconds);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, limitS) {
  const end = Date.now() + limitS * 1000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(what + ': not within ' + limitS + ' s');
    await sleep(100);
  }
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'strata-live-page-bench-'));
const trace = path.join(tmp, 'trace');
const work = path.join(tmp, 'work');
const stop = path.join(tmp, 'stop');
const serverFile = path.join(trace, '.live', 'server');
mkdirSync(work);
const job = spawn(path.join(opts.build, 'bin', 'strata'),
                  ['run', '--live', '-o', trace, '--', '/usr/bin/python3', path.join(repo, 'tests', 'web', 'live_workload.py'), work, stop],
                  {stdio: ['ignore', 'ignore', 'inherit']});
let browser;
try {
  const url = await until('the server file', () => existsSync(serverFile) && readFileSync(serverFile, 'utf8').split('\n')[0], 30);
  await until('four processes', () => readdirSync(path.join(trace, '.live')).filter((n) => n.endsWith('.live')).length >= 4, 30);
  browser = await chromium.launch({executablePath: opts.chromium, args: ['--no-sandbox']});
  const page = await browser.newPage({viewport: {width: 1400, height: 1000}});
  const requests = new Map();
  page.on('request', (r) => {
    const p = new URL(r.url()).pathname;
    requests.set(p, (requests.get(p) || 0) + 1);
  });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const t0 = Date.now();
  const resp = await page.goto(url);
  const pageBytes = (await resp.body()).length;
  const loaded = Date.now() - t0;
  await page.waitForSelector('#tasks tbody tr', {timeout: 15000});
  const firstRows = Date.now() - t0;
  const metrics = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
  const m0 = await metrics();
  requests.clear();
  const w0 = Date.now();
  await sleep(seconds * 1000);
  const m1 = await metrics();
  const wall = (Date.now() - w0) / 1000;
  const perS = (k) => ((m1[k] - m0[k]) * 1000 / wall).toFixed(1);
  console.log('page: ' + pageBytes + ' bytes; loaded ' + loaded + ' ms, first task rows ' + firstRows + ' ms after navigation');
  console.log('over ' + wall.toFixed(1) + ' s with ' + (await page.locator('#tasks tbody tr').count()) + ' task rows and ' +
              (await page.locator('#charts canvas').count()) + ' charts:');
  console.log('  renderer main thread: CPU ' + perS('ThreadTime') + ' ms/s; tasks ' + perS('TaskDuration') + ' ms/s, script ' + perS('ScriptDuration') +
              ' ms/s, layout ' + perS('LayoutDuration') + ' ms/s, style ' + perS('RecalcStyleDuration') +
              ' ms/s; JS heap ' + (m1.JSHeapUsedSize / 1048576).toFixed(1) + ' MiB, ' + m1.Nodes + ' DOM nodes');
  if (process.env.LIVE_PAGE_BENCH_ALL) console.log(m0, m1);
  for (const [p, n] of [...requests].sort()) console.log('  ' + p + ': ' + (n / wall).toFixed(2) + ' requests/s');
} finally {
  if (browser) await browser.close();
  writeFileSync(stop, '');
  await Promise.race([new Promise((r) => job.on('exit', r)), sleep(60000)]);
  if (job.exitCode === null) job.kill('SIGKILL');
  rmSync(tmp, {recursive: true, force: true});
}
