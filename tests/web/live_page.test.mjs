// The live page of `strata run --live` in headless Chromium, against a real
// launcher serving a real traced job (tests/web/test_live_page.py starts it).
//
//   node live_page.test.mjs --url URL --pids P,P,.. [--exited-pids P,..] --file PATH
//        --file-writes N --file-bytes N --stop-file PATH [--save-page HTML] [--chromium /usr/bin/chromium]
//   node live_page.test.mjs --serve-url URL --page-html HTML --pids .. --file .. --file-writes N --file-bytes N
//
// URL is the link the launcher printed (with ?token=). PIDS are the job's
// processes, EXITED-PIDS those of them that have already exited; PATH a file the job wrote once (N writes, N bytes in all).
// Touching STOP_FILE ends the job; --save-page keeps the page the launcher
// served. The second form checks that page against `strata serve` of the
// finished trace (SERVE URL with its token), where /api/status says
// "live": false. Prints one line per check ("ok - ..." or
// "not ok - ...") and, last, a JSON line {"passed", "failed", "pids"}; the
// exit status is 1 when a check failed. Every wait is bounded.
import {createRequire} from 'node:module';
import {readFileSync, writeFileSync} from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', '..', 'web', 'package.json'));
const {chromium} = require('playwright-core');

function parseArgs(argv) {
  const a = {chromium: '/usr/bin/chromium'};
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    a[k] = argv[i + 1];
  }
  const required = a.serveUrl !== undefined ? ['serveUrl', 'pageHtml', 'pids', 'file', 'fileWrites', 'fileBytes']
                                             : ['url', 'pids', 'file', 'fileWrites', 'fileBytes', 'stopFile'];
  for (const k of required)
    if (a[k] === undefined) throw new Error('missing --' + k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()));
  const pidList = (text) => (text ? text.split(',').map(Number) : []).sort((x, y) => x - y);
  a.pids = pidList(a.pids);
  a.exitedPids = pidList(a.exitedPids);
  a.runningPids = a.pids.filter((p) => !a.exitedPids.includes(p));
  a.fileWrites = Number(a.fileWrites);
  a.fileBytes = Number(a.fileBytes);
  return a;
}

const args = parseArgs(process.argv.slice(2));
let passed = 0;
let failed = 0;
function check(ok, what, detail) {
  if (ok) passed++; else failed++;
  console.log((ok ? 'ok - ' : 'not ok - ') + what + (!ok && detail !== undefined ? ': ' + JSON.stringify(detail) : ''));
  return ok;
}

// Polls fn (in node) until it returns a truthy value or `seconds` pass;
// returns the last value.
async function until(fn, seconds) {
  const end = Date.now() + seconds * 1000;
  let v;
  for (;;) {
    v = await fn();
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

// What the page shows for each process row.
const rowsOf = (page) => page.$$eval('#tasks tbody tr', (trs) => trs.map((tr) => {
  const v = (c) => tr.querySelector('td.' + c).dataset.value;
  return {pid: Number(tr.dataset.pid), state: tr.dataset.state, command: tr.querySelector('td.command').textContent,
          switchDisabled: tr.querySelector('td.mode select').disabled,
          mode: v('mode'), eps: Number(v('events-per-s')), text: tr.querySelector('td.events-per-s').textContent};
}));

const isRunning = (r) => r.state === 'running';
const token = () => new URL(args.url).searchParams.get('token');
// The rows of the job's processes that run (an image that exec'd is listed
// beside its successor under the same pid, as replaced).
const runningRows = async (page) => (await rowsOf(page)).filter((r) => args.runningPids.includes(r.pid) && isRunning(r));

// Console messages and page errors of one page, and the paths it requested.
function watch(page) {
  const w = {console: [], errors: [], requests: []};
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') w.console.push(m.type() + ': ' + m.text()); });
  page.on('pageerror', (e) => w.errors.push(String(e && e.message || e)));
  page.on('request', (r) => w.requests.push(r.url()));
  return w;
}

async function switchJob(page, mode) {
  await page.click('#job-switch button[data-mode="' + mode + '"]');
}

// Every process of the job (still running) shows `mode` and events/s that
// satisfy `rate`, within `seconds`.
async function waitRates(page, mode, rate, seconds) {
  let rows = [];
  const start = Date.now();
  const ok = await until(async () => {
    rows = await runningRows(page);
    return rows.length === args.runningPids.length && rows.every((r) => r.mode === mode && rate(r.eps));
  }, seconds);
  // For the record, not asserted: how long the page took to show it.
  console.log('# ' + mode + ': shown after ' + (Date.now() - start) + ' ms');
  return {ok, rows};
}

// The counters: the filter narrows the table to the job's directory and the
// file written once shows its exact counts.
async function checkCounters(page) {
  const dir = path.dirname(args.file);
  await page.fill('#path-filter', dir);
  let rec = null;
  let paths = [];
  await until(async () => {
    paths = await page.$$eval('#counters tr.record', (trs) => trs.map((tr) => tr.dataset.path));
    rec = await page.$$eval('#counters tr.record', (trs, file) => {
      const tr = trs.find((t) => t.dataset.path === file && t.dataset.module === 'POSIX');
      if (!tr) return null;
      const v = (c) => Number(tr.querySelector('td.' + c).dataset.value);
      return {opens: v('opens'), writes: v('writes'), written: v('bytes-written')};
    }, args.file);
    return rec && paths.every((p) => p.startsWith(dir));
  }, 15);
  check(rec !== null, 'the counters table lists ' + args.file, paths);
  check(rec && rec.opens === 1 && rec.writes === args.fileWrites && rec.written === args.fileBytes,
        'its POSIX counters: 1 open, ' + args.fileWrites + ' writes, ' + args.fileBytes + ' bytes written', rec);
  check(paths.length > 0 && paths.every((p) => p.startsWith(dir)), 'the path filter keeps only files under ' + dir, paths);
  await page.click('#counters tr.record[data-path="' + args.file + '"]');
  const opened = await page.textContent('#counters tr.details') || '';
  const shows = (name, value) => new RegExp(name + '\\s*' + value + '(?![\\d,.])').test(opened);
  check(shows('POSIX_BYTES_WRITTEN', Number(args.fileBytes).toLocaleString('en-US')) && shows('POSIX_WRITES', args.fileWrites),
        'a click on a record shows all its counters', opened.slice(0, 300));
  await page.click('#counters tr.record[data-path="' + args.file + '"]');
  check(await page.locator('#counters tr.details').count() === 0, 'a second click closes them');
}

async function mainPage(browser) {
  const page = await browser.newPage({viewport: {width: 1400, height: 1000}});
  page.setDefaultTimeout(10000);
  const w = watch(page);
  const origin = new URL(args.url).origin;
  await page.goto(args.url);

  const state = await until(() => page.evaluate(() => document.body.dataset.state === 'ok' && document.body.dataset.state), 15);
  check(state === 'ok', 'the page connects with the token of its address', await page.evaluate(() => document.body.dataset.state));
  check(await page.isVisible('#job-switch'), 'the job-wide switch is shown on a live job');

  // The processes: exactly the job's, in the mode of `-m`; the one that
  // exited is kept and marked.
  let rows = [];
  const exited = (r) => r.state === 'exited' && r.eps === 0 && r.switchDisabled;
  await until(async () => {
    rows = await rowsOf(page);
    return args.runningPids.every((p) => rows.some((r) => r.pid === p && isRunning(r) && r.eps > 0)) &&
           args.exitedPids.every((p) => rows.some((r) => r.pid === p && exited(r)));
  }, 20);
  const shown = [...new Set(rows.map((r) => r.pid))].sort((a, b) => a - b);
  check(JSON.stringify(shown) === JSON.stringify(args.pids), 'the rows are the job\'s processes', {shown, expected: args.pids});
  check(rows.length === args.pids.length && rows.every((r) => args.exitedPids.includes(r.pid) ? exited(r) : isRunning(r)),
        'the running processes show running; pid ' + args.exitedPids + ' exited, with 0 events/s and no switch', rows);
  check(rows.every((r) => r.mode === 'profile'), 'every process starts in profile mode', rows);
  check(rows.filter(isRunning).every((r) => r.eps > 0), 'every running process records events', rows);
  check(rows.some((r) => r.command.includes('live_workload.py')), 'the command is shown', rows.map((r) => r.command));
  const tree = await page.$$eval('#tasks tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.pid)));
  check(tree[0] === Math.min(...args.pids), 'the parent comes first (tree order)', tree);

  // Job-wide: off stops recording, trace restarts it.
  await switchJob(page, 'off');
  let r = await waitRates(page, 'off', (e) => e === 0, 10);
  check(r.ok, 'job-wide off: every process shows mode off and 0 events/s within 10 s', r.rows);
  check(await page.evaluate(() => document.querySelector('#job-switch [aria-pressed="true"]')?.dataset.mode) === 'off',
        'the job-wide switch shows off');
  check(new RegExp(args.runningPids.length + ' processes switched').test(await page.textContent('#notice')),
        'the page says how many processes switched',
        await page.textContent('#notice'));
  await switchJob(page, 'trace');
  r = await waitRates(page, 'trace', (e) => e > 0, 10);
  check(r.ok, 'job-wide trace: every process shows mode trace and events/s > 0 within 10 s', r.rows);

  // Per process: one worker off, the others keep recording.
  const worker = args.runningPids[args.runningPids.length - 1];
  await page.selectOption('#tasks tr[data-pid="' + worker + '"] td.mode select', 'off');
  let perPid = [];
  const perOk = await until(async () => {
    perPid = await runningRows(page);
    return perPid.length === args.runningPids.length && perPid.every((x) => x.pid === worker ? x.mode === 'off' && x.eps === 0 : x.mode === 'trace' && x.eps > 0);
  }, 10);
  check(perOk, 'the switch of pid ' + worker + ' stops only that process within 10 s', perPid);
  await page.selectOption('#tasks tr[data-pid="' + worker + '"] td.mode select', 'trace');
  r = await waitRates(page, 'trace', (e) => e > 0, 10);
  check(r.ok, 'switching it back to trace restarts it within 10 s', r.rows);

  // A timed job-wide switch: the header says what comes back, and a switch
  // until changed clears it.
  await page.selectOption('#switch-for', '30');
  await switchJob(page, 'off');
  r = await waitRates(page, 'off', (e) => e === 0, 10);
  check(r.ok, 'job-wide off for 30 s: every process shows off and 0 events/s within 10 s', r.rows);
  const revert = await until(() => page.evaluate(() => document.getElementById('job-revert').textContent), 5);
  check(/^back to trace at /.test(revert), 'the header says the job goes back to trace', revert);
  check(/for 30 s/.test(await page.textContent('#notice')), 'the notice names the duration', await page.textContent('#notice'));
  await page.selectOption('#switch-for', '0');
  await switchJob(page, 'trace');
  r = await waitRates(page, 'trace', (e) => e > 0, 10);
  check(r.ok, 'job-wide trace until changed: events/s > 0 again within 10 s', r.rows);
  const cleared = await until(() => page.evaluate(() => document.getElementById('job-revert').textContent === ''), 5);
  check(cleared, 'and the header no longer announces a return');

  // The small charts: the job's and one per process of /api/history (every
  // running one; one that lived less than the server's sampling second may
  // have no series).
  const history = await (await fetch(new URL('/api/history', args.url), {headers: {Authorization: 'Bearer ' + token()}})).json();
  const series = Object.keys(history.series).map(Number);
  check(args.runningPids.every((p) => series.includes(p)), 'the history has a series per running process', series);
  const charts = await until(() => page.evaluate((n) => Number(document.body.dataset.charts || 0) === n && n, 1 + series.length), 10);
  check(charts === 1 + series.length, 'a chart for the job and one per process of the history',
        await page.evaluate(() => document.body.dataset.charts));
  check(await page.locator('#charts canvas').count() === 1 + series.length, 'every chart has its canvas');

  await checkCounters(page);

  check(w.console.length === 0, 'no console errors or warnings', w.console);
  check(w.errors.length === 0, 'no page errors', w.errors);
  const foreign = w.requests.filter((u) => { const x = new URL(u); return x.origin !== origin || !(x.pathname === '/' || x.pathname.startsWith('/api/')); });
  check(foreign.length === 0, 'the page requests nothing but itself and the API', foreign);
  return {page, w, shown};
}

// The page served to an address without a token, or with a wrong one. The
// server answers GET / itself with 401/403, so the document comes from the
// real server's page (fetched with the token) while every API request goes
// to the real server without the token.
async function refusedPage(browser, html, search, status, state) {
  const base = new URL(args.url);
  const direct = await fetch(base.origin + '/api/status' + search);
  check(direct.status === status, 'the server answers /api/status' + (search || ' without token') + ' with ' + status, direct.status);
  const page = await browser.newPage();
  page.setDefaultTimeout(10000);
  const w = watch(page);
  await page.route((u) => u.pathname === '/', (route) => route.fulfill({status: 200, contentType: 'text/html; charset=utf-8', body: html}));
  await page.goto(base.origin + '/' + search);
  const shown = await until(() => page.evaluate((s) => document.body.dataset.state === s && s, state), 10);
  check(shown === state, 'the page' + (search ? ' with a wrong token' : ' without token') + ' shows the ' + status + ' state',
        await page.evaluate(() => document.body.dataset.state));
  const banner = await page.isVisible('#banner') ? await page.textContent('#banner') : '';
  check(banner.includes('(' + status + ')'), 'its banner says ' + status, banner);
  check(w.errors.length === 0, 'no page errors', w.errors);
  const unexpected = w.console.filter((m) => !m.includes('status of ' + status));
  check(unexpected.length === 0, 'no console messages but the refused requests', w.console);
  // The page stops asking once the token is refused.
  const before = w.requests.length;
  await page.waitForTimeout(2500);
  check(w.requests.length === before, 'it stops polling after a ' + status, w.requests.slice(before));
  await page.close();
}

// The live page over `strata serve` of the finished trace: "live": false, so
// no switches; the processes are the trace's, exited; the counters the same.
async function servePage(browser) {
  const base = new URL(args.serveUrl);
  const page = await browser.newPage({viewport: {width: 1400, height: 1000}});
  page.setDefaultTimeout(10000);
  const w = watch(page);
  const html = readFileSync(args.pageHtml, 'utf8');
  await page.route((u) => u.pathname === '/', (route) => route.fulfill({status: 200, contentType: 'text/html; charset=utf-8', body: html}));
  await page.goto(args.serveUrl);
  const live = await until(() => page.evaluate(() => document.body.dataset.state === 'ok' && document.body.dataset.live), 15);
  check(live === 'false', 'over strata serve the page connects and says live: false', live);
  let rows = [];
  await until(async () => (rows = await rowsOf(page)).length >= args.pids.length, 10);
  const shown = [...new Set(rows.map((r) => r.pid))].sort((a, b) => a - b);
  check(JSON.stringify(shown) === JSON.stringify(args.pids), 'its rows are the trace\'s processes', {shown, expected: args.pids});
  check(rows.length > 0 && rows.every((r) => r.state === 'exited'), 'all exited', rows);
  check(!(await page.isVisible('#job-controls')), 'the job-wide switch is hidden');
  check(await page.locator('#tasks td.mode select:visible').count() === 0, 'no process has a switch');
  await checkCounters(page);
  check(w.console.length === 0, 'no console errors or warnings', w.console);
  check(w.errors.length === 0, 'no page errors', w.errors);
  const foreign = w.requests.filter((u) => { const x = new URL(u); return x.origin !== base.origin || !(x.pathname === '/' || x.pathname.startsWith('/api/')); });
  check(foreign.length === 0, 'the page requests nothing but itself and the API', foreign);
  return shown;
}

async function main() {
  const browser = await chromium.launch({executablePath: args.chromium, args: ['--no-sandbox']});
  let pids = [];
  try {
    pids = args.serveUrl !== undefined ? await servePage(browser) : await liveJob(browser);
  } catch (e) {
    check(false, 'the test ran to its end', String(e && e.stack || e));
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify({passed, failed, pids}));
  process.exit(failed ? 1 : 0);
}

// The live job: the page, the document the launcher serves, the refused
// states, and the end of the job.
async function liveJob(browser) {
  const {page, shown} = await mainPage(browser);
  const withToken = await fetch(args.url);
  check(withToken.status === 200, 'GET / with the token answers 200', withToken.status);
  const html = await withToken.text();
  if (args.savePage) writeFileSync(args.savePage, html);
  check(!html.includes('/*STRATA_LIVE_JS*/') && html.includes('const StrataLive'), 'the served page embeds web/live.js');
  check(html.includes('Chart.js v'), 'the served page embeds Chart.js');
  const bare = await fetch(new URL(args.url).origin + '/');
  check(bare.status === 401, 'GET / without token answers 401', bare.status);
  await refusedPage(browser, html, '', 401, 'unauthorized');
  await refusedPage(browser, html, '?token=0123456789abcdef0123456789abcdef', 403, 'forbidden');

  // The job ends, the launcher stops serving: the page says so and keeps
  // the rows it had.
  writeFileSync(args.stopFile, '');
  const gone = await until(() => page.evaluate(() => document.body.dataset.state === 'unreachable'), 60);
  check(gone, 'when the job ends and its launcher stops, the page shows the lost connection');
  check(/does not answer/.test(await page.textContent('#banner')), 'its banner says the server does not answer');
  const after = await rowsOf(page);
  check(args.pids.every((p) => after.some((x) => x.pid === p)), 'and it keeps every process row', after);
  return shown;
}

main();
