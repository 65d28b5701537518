// The live page of `strata run --live` (docs/live.md, "The page"). It polls
// the launcher's REST API with the token of its own address and shows every
// process of the job as a task row, the last minutes as small charts, the
// Darshan counters, and the mode switches. Plain script, no framework: the
// launcher embeds it into web/live.html after Chart.js.
//
// StrataLive holds the pure logic (units, row keys, tree order, failure
// messages, chart series, counter columns); tests/web/live_logic.test.mjs runs
// it under node. The page wiring below it runs only where there is a document.
'use strict';

const StrataLive = (() => {
  const MODES = ['off', 'profile', 'trace', 'smart'];
  // A process in these states can still switch mode and has rates.
  const ACTIVE_STATES = new Set(['starting', 'running']);

  const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  const COUNT_UNITS = ['', 'k', 'M', 'G', 'T'];

  function isNumber(n) { return typeof n === 'number' && Number.isFinite(n); }

  // Three significant digits are what a glance at a rate needs.
  function scaled(n, base, units, sep) {
    if (!isNumber(n) || n < 0) return '\u2013';
    let i = 0;
    while (n >= base && i < units.length - 1) { n /= base; i++; }
    if (i === 0) return String(Math.round(n)) + (units[0] ? sep + units[0] : '');
    const digits = n < 10 ? 2 : n < 100 ? 1 : 0;
    return n.toFixed(digits) + sep + units[i];
  }
  const humanBytes = (n) => scaled(n, 1024, BYTE_UNITS, ' ');
  const humanRate = (n) => isNumber(n) && n >= 0 ? humanBytes(n) + '/s' : '\u2013';
  const humanCount = (n) => scaled(n, 1000, COUNT_UNITS, '');
  // Exact integers (counters a user compares with `ls -l`), grouped by thousands.
  const exact = (n) => isNumber(n) ? Math.round(n).toLocaleString('en-US') : '\u2013';
  const seconds = (n) => isNumber(n) ? n.toFixed(n < 10 ? 4 : 2) : '\u2013';

  // A row per process image. A process that calls exec keeps its pid: the old
  // image is listed as "replaced" beside its successor, so the key also needs
  // the image's start (when the server sends it) or its order within the pid.
  function keyProcesses(processes) {
    const seen = new Map();
    return processes.map((p) => {
      const start = p.id ?? p.start_wall_ns ?? p.start_ns;
      if (start !== undefined) return {key: p.pid + '@' + start, p};
      const n = seen.get(p.pid) || 0;
      seen.set(p.pid, n + 1);
      return {key: n ? p.pid + '.' + n : String(p.pid), p};
    });
  }

  // The processes of the latest answer, plus every process the page saw
  // before and the server no longer lists: those stay, marked as gone, with
  // no rates (the page never drops a row).
  function mergeProcesses(known, keyed) {
    const merged = new Map();
    for (const {key, p} of keyed) merged.set(key, p);
    for (const [key, p] of known) {
      if (merged.has(key)) continue;
      const state = ACTIVE_STATES.has(p.state) ? 'gone' : p.state;
      merged.set(key, Object.assign({}, p, {state, events_per_s: 0, read_bytes_per_s: 0, written_bytes_per_s: 0}));
    }
    return merged;
  }

  // Rows in process-tree order: children under their parent, siblings by pid.
  // Children hang under the last image of their parent's pid (the one that
  // runs); entries caught in a pid-reuse cycle end up as roots at the end.
  function treeOrder(merged) {
    const entries = [...merged].map(([key, p]) => ({key, p}));
    const byPid = new Map();
    for (const e of entries) byPid.set(e.p.pid, e.key);
    const children = new Map();
    const roots = [];
    for (const e of entries) {
      const parent = byPid.get(e.p.ppid);
      if (parent === undefined || e.p.ppid === e.p.pid) roots.push(e);
      else {
        if (!children.has(parent)) children.set(parent, []);
        children.get(parent).push(e);
      }
    }
    const bySibling = (a, b) => a.p.pid - b.p.pid || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
    const out = [];
    const visited = new Set();
    const visit = (e, depth) => {
      if (visited.has(e.key)) return;
      visited.add(e.key);
      out.push({key: e.key, p: e.p, depth});
      for (const c of (children.get(e.key) || []).sort(bySibling)) visit(c, depth + 1);
    };
    roots.sort(bySibling).forEach((e) => visit(e, 0));
    entries.filter((e) => !visited.has(e.key)).sort(bySibling).forEach((e) => visit(e, 0));
    return out;
  }

  // What the banner says for a failed request: f is {status, error} for an
  // HTTP answer, {network: detail} when no answer came. `stop`: retrying
  // cannot help (the token is missing or wrong).
  function describeFailure(f) {
    if (f.status === 401) return {state: 'unauthorized', stop: true,
      message: 'Not authorized (401): this address has no token. Open the link that ' +
               '`strata run --live` printed; it ends in ?token=\u2026'};
    if (f.status === 403) return {state: 'forbidden', stop: true,
      message: 'Forbidden (403): the token in this address is not this server\'s. Every ' +
               'strata run makes a new one: open the link the current run printed.'};
    if (f.network !== undefined) return {state: 'unreachable', stop: false,
      message: 'The strata server does not answer (' + f.network + '): the job has ended or ' +
               'its launcher has stopped. The job does not depend on this page. Retrying every second.'};
    return {state: 'server-error', stop: false,
      message: 'The strata server answered ' + f.status + (f.error ? ': ' + f.error : '') + '. Retrying every second.'};
  }

  // One chart series from /api/history: points {x: seconds before `end`, y}
  // inside the window. Rows are [t, events_per_s, read_Bps, written_Bps].
  function seriesPoints(rows, column, end, windowS) {
    const out = [];
    for (const r of rows || []) {
      const x = r[0] - end;
      if (x >= -windowS && isNumber(r[column])) out.push({x, y: r[column]});
    }
    return out;
  }

  function historyEnd(history) {
    let end = -Infinity;
    for (const rows of Object.values((history && history.series) || {}))
      for (const r of rows) if (r[0] > end) end = r[0];
    return end;
  }

  // The whole job: the sum of every process's rows, sample by sample (the
  // server samples all processes at once, so their times match).
  function jobTotal(history) {
    const sums = new Map();
    for (const rows of Object.values((history && history.series) || {}))
      for (const r of rows) {
        const s = sums.get(r[0]) || [r[0], 0, 0, 0];
        for (let c = 1; c < 4; c++) s[c] += isNumber(r[c]) ? r[c] : 0;
        sums.set(r[0], s);
      }
    return [...sums.values()].sort((a, b) => a[0] - b[0]);
  }

  // Darshan counter columns of the table; names without the module prefix,
  // so POSIX and STDIO records share them.
  const COUNTER_COLUMNS = [
    {name: 'OPENS', format: exact}, {name: 'READS', format: exact}, {name: 'WRITES', format: exact},
    {name: 'BYTES_READ', format: exact, title: humanBytes}, {name: 'BYTES_WRITTEN', format: exact, title: humanBytes},
    {name: 'F_READ_TIME', format: seconds, f: true}, {name: 'F_WRITE_TIME', format: seconds, f: true},
    {name: 'F_META_TIME', format: seconds, f: true},
  ];

  function counterValue(record, column) {
    const table = (column.f ? record.fcounters : record.counters) || {};
    const prefixed = record.module + '_' + column.name;
    if (prefixed in table) return table[prefixed];
    return table[column.name];
  }

  function counterKey(record) {
    return [record.path, record.module, record.pid ?? '', record.rank ?? ''].join('\u0000');
  }

  function sortCounters(files) {
    return [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) ||
                                     (a.module < b.module ? -1 : a.module > b.module ? 1 : 0) ||
                                     ((a.rank ?? -1) - (b.rank ?? -1)) || ((a.pid ?? -1) - (b.pid ?? -1)));
  }

  function tagsText(tags) {
    if (!tags || typeof tags !== 'object') return '';
    return Object.entries(tags).map(([k, v]) => k + '=' + (typeof v === 'string' ? v : JSON.stringify(v))).join(' ');
  }

  // A timed job-wide switch: when it ends and what comes back (nothing once
  // that time has passed).
  function revertText(job, nowMs) {
    const at = job && Number(job.revert_at_wall_ns);
    if (!at || !job.revert_mode || at / 1e6 <= nowMs) return '';
    return 'back to ' + job.revert_mode + ' at ' + new Date(at / 1e6).toLocaleTimeString();
  }

  function stateText(p) {
    if (p.state === 'exited' && isNumber(p.exit_status)) return 'exited (' + p.exit_status + ')';
    return String(p.state || 'unknown');
  }

  return {MODES, ACTIVE_STATES, humanBytes, humanRate, humanCount, exact, seconds, keyProcesses,
          mergeProcesses, treeOrder, describeFailure, seriesPoints, historyEnd, jobTotal,
          COUNTER_COLUMNS, counterValue, counterKey, sortCounters, tagsText, revertText, stateText};
})();

if (typeof module === 'object' && module.exports) module.exports = StrataLive;

// ---- the page ---------------------------------------------------------------

const STATUS_PERIOD_MS = 1000;
const HISTORY_PERIOD_MS = 2000;
const COUNTERS_PERIOD_MS = 10000;
const REQUEST_TIMEOUT_MS = 5000;
const MAX_CHARTS = 24;
const MAX_COUNTER_ROWS = 500;
const TASK_COLUMNS = ['pid', 'ppid', 'command', 'state', 'mode', 'events-per-s', 'read-per-s',
                      'written-per-s', 'read', 'written', 'open-files', 'tags'];
const PALETTE = {events: '#1f77b4', read: '#2ca02c', written: '#d62728'};

class ApiFailure extends Error {
  constructor(failure) {
    super(failure.network !== undefined ? failure.network : 'HTTP ' + failure.status);
    this.failure = failure;
  }
}

function startPage() {
  const L = StrataLive;
  const $ = (id) => document.getElementById(id);
  const token = new URLSearchParams(location.search).get('token') || '';
  const page = {
    live: null,          // from /api/status; null until the first answer
    stopped: false,      // a 401/403: no more requests
    known: new Map(),    // key -> process, every process ever listed
    rows: new Map(),     // key -> <tr>
    order: '',
    charts: new Map(),   // pid (or 'job') -> {card, chart}
    lastHistory: null,
    countersSeq: 0,
    countersBusy: false,
    expanded: new Set(), // counter rows whose details are open
    polls: 0,
  };

  // ---- requests ----
  async function api(path, options = {}) {
    const headers = Object.assign({}, options.headers);
    if (token) headers.Authorization = 'Bearer ' + token;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), REQUEST_TIMEOUT_MS);
    try {
      let resp;
      try {
        resp = await fetch(path, Object.assign({}, options, {headers, cache: 'no-store', signal: abort.signal}));
      } catch (e) {
        throw new ApiFailure({network: e.name === 'AbortError' ? 'no answer within ' + REQUEST_TIMEOUT_MS / 1000 + ' s'
                                                               : 'connection failed'});
      }
      let body = null;
      try { body = await resp.json(); } catch (e) { body = null; }
      if (!resp.ok) throw new ApiFailure({status: resp.status, error: body && body.error});
      return body;
    } finally {
      clearTimeout(timer);
    }
  }

  // A failure of the status poll, or a 401/403/lost connection of any
  // request, sets the banner; other failures go to `where` (a note).
  function fail(e, where) {
    if (!(e instanceof ApiFailure)) throw e;
    const f = L.describeFailure(e.failure);
    if (where && f.state === 'server-error') { where(f.message); return; }
    document.body.dataset.state = f.state;
    const banner = $('banner');
    banner.textContent = f.message;
    banner.hidden = false;
    $('connection').textContent = f.state === 'unreachable' ? 'disconnected' : f.state.replace('-', ' ');
    if (f.stop) page.stopped = true;
  }

  function connected() {
    document.body.dataset.state = 'ok';
    $('banner').hidden = true;
  }

  function notice(text, isError) {
    const n = $('notice');
    n.textContent = text;
    n.classList.toggle('error', !!isError);
    n.hidden = false;
  }

  // ---- status: the task table ----
  async function pollStatus() {
    if (page.stopped) return;
    try {
      const s = await api('/api/status');
      connected();
      renderStatus(s);
      page.polls++;
      document.body.dataset.polls = page.polls;
    } catch (e) {
      fail(e);
    } finally {
      // A bug in rendering shows on the console but does not stop the polls.
      if (!page.stopped) setTimeout(pollStatus, STATUS_PERIOD_MS);
    }
  }

  function setLive(live) {
    if (page.live === live) return;
    page.live = live;
    document.body.dataset.live = String(live);
    $('job-controls').hidden = !live;
    if (!live) $('counters-auto').checked = false;
  }

  function renderStatus(s) {
    setLive(s.live !== false);
    const jobMode = s.job && s.job.mode;
    for (const b of $('job-switch').querySelectorAll('button'))
      b.setAttribute('aria-pressed', String(b.dataset.mode === jobMode));
    document.body.dataset.jobMode = jobMode || '';
    $('job-revert').textContent = L.revertText(s.job, Date.now());
    const merged = L.mergeProcesses(page.known, L.keyProcesses(s.processes || []));
    page.known = merged;
    const ordered = L.treeOrder(merged);
    for (const {key, p, depth} of ordered) updateRow(rowFor(key), p, depth);
    placeRows(ordered);
    $('tasks-empty').hidden = ordered.length > 0;
    renderSummary(ordered.map((o) => o.p));
    $('connection').textContent = (page.live ? 'live' : 'finished trace') + ' \u00b7 ' + new Date().toLocaleTimeString();
  }

  function rowFor(key) {
    let tr = page.rows.get(key);
    if (tr) return tr;
    tr = document.createElement('tr');
    tr.dataset.key = key;
    for (const c of TASK_COLUMNS) {
      const td = document.createElement('td');
      td.className = c;
      tr.appendChild(td);
    }
    const modeCell = tr.querySelector('td.mode');
    const text = document.createElement('span');
    text.className = 'mode-text';
    const select = document.createElement('select');
    select.setAttribute('aria-label', 'mode of this process');
    for (const m of L.MODES) select.add(new Option(m, m));
    select.addEventListener('change', () => switchMode(select.value, Number(tr.dataset.pid)));
    modeCell.append(text, select);
    page.rows.set(key, tr);
    return tr;
  }

  // Cells change only when their text does, so a reader's selection, an open
  // list of files and a focused switch survive the poll.
  function setCell(td, text, value, title) {
    if (td.textContent !== text) td.textContent = text;
    if (value !== undefined && td.dataset.value !== String(value)) td.dataset.value = String(value);
    if (title !== undefined && td.title !== title) td.title = title;
  }

  function updateRow(tr, p, depth) {
    const cell = (c) => tr.querySelector('td.' + c);
    const active = L.ACTIVE_STATES.has(p.state);
    tr.dataset.pid = String(p.pid);
    tr.dataset.state = String(p.state);
    tr.classList.toggle('inactive', !active);
    setCell(cell('pid'), String(p.pid), p.pid);
    setCell(cell('ppid'), p.ppid === undefined ? '' : String(p.ppid), p.ppid);
    const command = cell('command');
    setCell(command, p.command || '', undefined, p.command || '');
    command.style.paddingLeft = (0.5 + 1.2 * depth) + 'em';
    setCell(cell('state'), L.stateText(p));
    cell('state').dataset.value = String(p.state);
    updateModeCell(cell('mode'), p, active);
    setCell(cell('events-per-s'), L.humanCount(p.events_per_s), p.events_per_s, 'events recorded: ' + L.exact(p.events));
    setCell(cell('read-per-s'), L.humanRate(p.read_bytes_per_s), p.read_bytes_per_s);
    setCell(cell('written-per-s'), L.humanRate(p.written_bytes_per_s), p.written_bytes_per_s);
    setCell(cell('read'), L.humanBytes(p.read_bytes), p.read_bytes, L.exact(p.read_bytes) + ' B');
    setCell(cell('written'), L.humanBytes(p.written_bytes), p.written_bytes, L.exact(p.written_bytes) + ' B');
    // open_files may be truncated (the slot's text field); the count is not.
    const files = Array.isArray(p.open_files) ? p.open_files : [];
    const open = Number.isInteger(p.open_file_count) ? p.open_file_count : files.length;
    setCell(cell('open-files'), String(open), open, files.join('\n'));
    const tags = L.tagsText(p.tags);
    setCell(cell('tags'), tags, undefined, tags);
  }

  function updateModeCell(td, p, active) {
    td.dataset.value = String(p.mode || '');
    const text = td.querySelector('.mode-text');
    if (text.textContent !== (p.mode || '')) text.textContent = p.mode || '';
    const select = td.querySelector('select');
    // Never change a switch under the user's hand.
    if (document.activeElement !== select && L.MODES.includes(p.mode) && select.value !== p.mode) select.value = p.mode;
    select.disabled = !active;
  }

  function placeRows(ordered) {
    const order = ordered.map((o) => o.key).join(',');
    if (order === page.order) return;
    page.order = order;
    const body = $('tasks').tBodies[0];
    for (const {key} of ordered) body.appendChild(page.rows.get(key));
  }

  function renderSummary(processes) {
    const running = processes.filter((p) => L.ACTIVE_STATES.has(p.state));
    const sum = (f) => running.reduce((a, p) => a + (Number(p[f]) || 0), 0);
    $('job-summary').textContent = processes.length + ' process' + (processes.length === 1 ? '' : 'es') +
      ' (' + running.length + ' running) \u00b7 ' + L.humanCount(sum('events_per_s')) + ' events/s \u00b7 read ' +
      L.humanRate(sum('read_bytes_per_s')) + ' \u00b7 written ' + L.humanRate(sum('written_bytes_per_s'));
  }

  // ---- switches ----
  async function switchMode(mode, pid) {
    const body = {mode};
    if (pid !== undefined) body.pid = pid;
    const forS = Number($('switch-for').value);
    if (forS > 0) body.for_s = forS;
    const who = pid === undefined ? 'the job' : 'pid ' + pid;
    try {
      const r = await api('/api/mode', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                        body: JSON.stringify(body)});
      const n = r && Array.isArray(r.switched) ? r.switched.length : 0;
      const pending = r && Array.isArray(r.pending) ? r.pending : [];
      notice(who + ' \u2192 ' + mode + (forS > 0 ? ' for ' + forS + ' s' : '') + ': ' + n + ' process' +
             (n === 1 ? '' : 'es') + ' switched' +
             (pending.length ? '; not yet acknowledged by pid ' + pending.join(', ') : ''));
    } catch (e) {
      fail(e, (m) => notice('switching ' + who + ' to ' + mode + ' failed: ' + m, true));
    }
  }

  for (const b of $('job-switch').querySelectorAll('button'))
    b.addEventListener('click', () => switchMode(b.dataset.mode));

  // ---- history: the small charts ----
  async function pollHistory() {
    if (page.stopped) return;
    try {
      page.lastHistory = await api('/api/history');
      drawCharts();
    } catch (e) {
      fail(e, (m) => { $('charts-note').textContent = 'history: ' + m; });
    } finally {
      // A finished trace's history does not change.
      if (!page.stopped && page.live !== false) setTimeout(pollHistory, HISTORY_PERIOD_MS);
    }
  }

  function chartOrder(history) {
    const pids = Object.keys(history.series || {});
    const rank = new Map();
    let i = 0;
    for (const o of L.treeOrder(page.known)) if (!rank.has(String(o.p.pid))) rank.set(String(o.p.pid), i++);
    return pids.sort((a, b) => (rank.get(a) ?? 1e9) - (rank.get(b) ?? 1e9) || Number(a) - Number(b));
  }

  function drawCharts() {
    const h = page.lastHistory;
    if (!h) return;
    if (typeof Chart === 'undefined') {
      $('charts-note').textContent = 'Charts unavailable: this strata was built without Chart.js (run web/build.sh).';
      return;
    }
    const windowS = Number($('chart-window').value);
    const end = L.historyEnd(h);
    const pids = chartOrder(h);
    if (!Number.isFinite(end)) {
      $('charts-note').textContent = 'No history yet.';
      return;
    }
    const shown = pids.slice(0, MAX_CHARTS);
    $('charts-note').textContent = 'Sampled every ' + (h.interval_s || 1) + ' s; x: seconds before the last sample.' +
      (pids.length > shown.length ? ' Showing ' + shown.length + ' of ' + pids.length + ' processes.' : '');
    drawChart('job', 'whole job', L.jobTotal(h), end, windowS);
    for (const pid of shown) {
      const p = commandOf(pid);
      drawChart(pid, 'pid ' + pid + (p && p.command ? ' \u00b7 ' + p.command : ''), h.series[pid], end, windowS);
    }
    for (const [id, c] of page.charts)
      if (id !== 'job' && !shown.includes(id)) { c.chart.destroy(); c.card.remove(); page.charts.delete(id); }
    document.body.dataset.charts = String(page.charts.size);
  }

  // The running image of a pid names its chart (not the one it exec'd from).
  function commandOf(pid) {
    const images = [...page.known.values()].filter((q) => String(q.pid) === pid);
    return images.find((q) => L.ACTIVE_STATES.has(q.state)) || images[images.length - 1];
  }

  function drawChart(id, title, rows, end, windowS) {
    let c = page.charts.get(id);
    if (!c) c = newChart(id, title);
    c.card.querySelector('.chart-title').textContent = title;
    const ds = c.chart.data.datasets;
    ds[0].data = L.seriesPoints(rows, 1, end, windowS);
    ds[1].data = L.seriesPoints(rows, 2, end, windowS);
    ds[2].data = L.seriesPoints(rows, 3, end, windowS);
    c.chart.options.scales.x.min = -windowS;
    c.chart.update('none');
  }

  function newChart(id, title) {
    const card = document.createElement('div');
    card.className = 'chart-card';
    card.dataset.chart = id;
    const h = document.createElement('div');
    h.className = 'chart-title';
    h.textContent = title;
    const box = document.createElement('div');
    box.className = 'chart-box';
    const canvas = document.createElement('canvas');
    box.appendChild(canvas);
    card.append(h, box);
    $('charts').appendChild(card);
    const line = (label, color, axis, dash) => ({label, data: [], borderColor: color, backgroundColor: color,
      yAxisID: axis, pointRadius: 0, borderWidth: 1.5, borderDash: dash || [], parsing: false});
    const chart = new Chart(canvas, {
      type: 'line',
      data: {datasets: [line('events/s', PALETTE.events, 'ev'), line('read B/s', PALETTE.read, 'bw', [4, 3]),
                        line('written B/s', PALETTE.written, 'bw', [2, 2])]},
      options: {
        animation: false, maintainAspectRatio: false, normalized: true,
        plugins: {legend: {labels: {boxWidth: 12, font: {size: 10}}}},
        scales: {
          x: {type: 'linear', max: 0, ticks: {font: {size: 9}, callback: (v) => v + ' s'}},
          // Whole-number ticks: an idle process's axis reads 0..1, not 0, 0, 1, 1.
          ev: {position: 'left', beginAtZero: true, suggestedMax: 1,
               ticks: {font: {size: 9}, precision: 0, callback: (v) => L.humanCount(v)}},
          bw: {position: 'right', beginAtZero: true, suggestedMax: 1, grid: {drawOnChartArea: false},
               ticks: {font: {size: 9}, precision: 0, callback: (v) => L.humanRate(v)}},
        },
      },
    });
    const c = {card, chart};
    page.charts.set(id, c);
    return c;
  }

  $('chart-window').addEventListener('change', drawCharts);

  // ---- counters ----
  async function loadCounters() {
    if (page.stopped || page.countersBusy) return;
    const prefix = $('path-filter').value.trim();
    const seq = ++page.countersSeq;
    page.countersBusy = true;
    $('counters-note').textContent = 'loading\u2026';
    try {
      const r = await api('/api/counters' + (prefix ? '?path=' + encodeURIComponent(prefix) : ''));
      if (seq !== page.countersSeq) return;
      renderCounters(r && Array.isArray(r.files) ? r.files : [], prefix);
    } catch (e) {
      fail(e, (m) => { $('counters-note').textContent = 'counters: ' + m; });
    } finally {
      page.countersBusy = false;
      // The filter changed while this request ran: ask again for the new one.
      if (seq === page.countersSeq && $('path-filter').value.trim() !== prefix) loadCounters();
    }
  }

  function renderCounters(files, prefix) {
    const sorted = L.sortCounters(files);
    const shown = sorted.slice(0, MAX_COUNTER_ROWS);
    const body = $('counters').tBodies[0];
    const rows = [];
    for (const f of shown) {
      const key = L.counterKey(f);
      const tr = document.createElement('tr');
      tr.className = 'record';
      tr.dataset.path = f.path;
      tr.dataset.module = f.module;
      if (f.pid !== undefined) tr.dataset.pid = String(f.pid);
      tr.title = 'click: every counter of this record';
      const td = (cls, text, value, title) => {
        const c = document.createElement('td');
        if (cls) c.className = cls;
        c.textContent = text;
        if (value !== undefined) c.dataset.value = String(value);
        if (title) c.title = title;
        tr.appendChild(c);
      };
      td('path', f.path, undefined, f.path);
      td('module', f.module);
      td('pid', f.pid === undefined ? '' : String(f.pid), f.pid);
      td('rank', f.rank === undefined ? '' : String(f.rank), f.rank);
      for (const col of L.COUNTER_COLUMNS) {
        const v = L.counterValue(f, col);
        td(col.name.toLowerCase().replace(/_/g, '-'), col.format(v), v, col.title ? col.title(v) : undefined);
      }
      rows.push(tr);
      // The ~100 counters of a record are built only while it is open: a
      // table of every record's details is tens of thousands of nodes.
      if (page.expanded.has(key)) rows.push(counterDetails(f));
      tr.addEventListener('click', () => {
        const open = tr.nextElementSibling && tr.nextElementSibling.classList.contains('details');
        if (open) { tr.nextElementSibling.remove(); page.expanded.delete(key); }
        else { tr.after(counterDetails(f)); page.expanded.add(key); }
      });
    }
    body.replaceChildren(...rows);
    const when = new Date().toLocaleTimeString();
    $('counters-note').textContent = (shown.length < sorted.length
      ? 'showing ' + shown.length + ' of ' + sorted.length + ' records: narrow the path prefix'
      : sorted.length + ' record' + (sorted.length === 1 ? '' : 's')) +
      (prefix ? ' under ' + prefix : '') + ' \u00b7 ' + when;
    document.body.dataset.counters = String(sorted.length);
  }

  function counterDetails(f) {
    const tr = document.createElement('tr');
    tr.className = 'details';
    const td = document.createElement('td');
    td.colSpan = 4 + L.COUNTER_COLUMNS.length;
    const dl = document.createElement('dl');
    for (const table of [f.counters || {}, f.fcounters || {}])
      for (const [k, v] of Object.entries(table)) {
        const dt = document.createElement('dt');
        dt.textContent = k;
        const dd = document.createElement('dd');
        dd.textContent = Number.isInteger(v) ? L.exact(v) : String(v);
        const pair = document.createElement('div');
        pair.append(dt, dd);
        dl.appendChild(pair);
      }
    td.appendChild(dl);
    tr.appendChild(td);
    return tr;
  }

  let filterTimer = 0;
  $('path-filter').addEventListener('input', () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(loadCounters, 300);
  });
  $('counters-refresh').addEventListener('click', loadCounters);
  setInterval(() => {
    if ($('counters-auto').checked && page.live && !document.hidden) loadCounters();
  }, COUNTERS_PERIOD_MS);

  // ---- start ----
  pollStatus();
  pollHistory();
  loadCounters();
}

if (typeof document !== 'undefined') startPage();
