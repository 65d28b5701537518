// The pure logic of the live page (StrataLive in web/live.js) under node:
// units, row keys, tree order, the rows the page keeps, failure messages,
// chart series and counter columns. Run: node --test tests/web/live_logic.test.mjs
import {test} from 'node:test';
import assert from 'node:assert/strict';
import {createRequire} from 'node:module';

const require = createRequire(import.meta.url);
const L = require('../../web/live.js');

test('byte units: exact below 1 KiB, three significant digits above', () => {
  assert.equal(L.humanBytes(0), '0 B');
  assert.equal(L.humanBytes(1023), '1023 B');
  assert.equal(L.humanBytes(1024), '1.00 KiB');
  assert.equal(L.humanBytes(1536), '1.50 KiB');
  assert.equal(L.humanBytes(120000), '117 KiB');
  assert.equal(L.humanBytes(5 * 1024 ** 3), '5.00 GiB');
  assert.equal(L.humanRate(2 * 1024 ** 2), '2.00 MiB/s');
  assert.equal(L.humanBytes(undefined), '\u2013');
  assert.equal(L.humanRate(-1), '\u2013');
});

test('counts: plain below 1000, k/M above; exact with thousands groups', () => {
  assert.equal(L.humanCount(0), '0');
  assert.equal(L.humanCount(999), '999');
  assert.equal(L.humanCount(1800), '1.80k');
  assert.equal(L.humanCount(25300000), '25.3M');
  assert.equal(L.exact(120000), '120,000');
  assert.equal(L.exact(null), '\u2013');
  assert.equal(L.seconds(0.12345), '0.1235');
});

test('rows are keyed by pid, and by order within a pid after exec', () => {
  const keyed = L.keyProcesses([{pid: 7, state: 'replaced'}, {pid: 7, state: 'running'}, {pid: 9}]);
  assert.deepEqual(keyed.map((k) => k.key), ['7', '7.1', '9']);
  assert.deepEqual(L.keyProcesses([{pid: 7, start_wall_ns: 5}]).map((k) => k.key), ['7@5']);
});

test('a process the server stops listing stays, as gone and without rates', () => {
  const first = L.mergeProcesses(new Map(), L.keyProcesses([
    {pid: 1, state: 'running', events_per_s: 10}, {pid: 2, state: 'exited', exit_status: 3, events_per_s: 0},
    {pid: 3, state: 'running', events_per_s: 5, read_bytes_per_s: 7}]));
  const second = L.mergeProcesses(first, L.keyProcesses([{pid: 1, state: 'running', events_per_s: 11}]));
  assert.deepEqual([...second.keys()], ['1', '2', '3']);
  assert.equal(second.get('1').events_per_s, 11);
  assert.equal(second.get('2').state, 'exited');
  assert.equal(L.stateText(second.get('2')), 'exited (3)');
  assert.equal(second.get('3').state, 'gone');
  assert.equal(second.get('3').events_per_s, 0);
  assert.equal(second.get('3').read_bytes_per_s, 0);
});

test('tree order: children under the running image of their parent, siblings by pid', () => {
  const merged = new Map(L.keyProcesses([
    {pid: 30, ppid: 10}, {pid: 10, ppid: 1, state: 'replaced'}, {pid: 10, ppid: 1, state: 'running'},
    {pid: 20, ppid: 10}, {pid: 40, ppid: 20}, {pid: 5, ppid: 99},
    {pid: 50, ppid: 60}, {pid: 60, ppid: 50}]).map(({key, p}) => [key, p]));
  const order = L.treeOrder(merged).map((o) => o.key + ':' + o.depth);
  // 5 and both images of 10 are roots (their parents are not listed); the
  // 50/60 cycle (pid reuse) still shows, as roots at the end.
  assert.deepEqual(order, ['5:0', '10:0', '10.1:0', '20:1', '40:2', '30:1', '50:0', '60:1']);
});

test('failures: 401 and 403 stop the page, a lost server is retried', () => {
  const u = L.describeFailure({status: 401});
  assert.equal(u.state, 'unauthorized');
  assert.equal(u.stop, true);
  assert.match(u.message, /\(401\)/);
  assert.match(u.message, /token/);
  const f = L.describeFailure({status: 403, error: 'wrong token'});
  assert.equal(f.state, 'forbidden');
  assert.equal(f.stop, true);
  const n = L.describeFailure({network: 'connection failed'});
  assert.equal(n.state, 'unreachable');
  assert.equal(n.stop, false);
  assert.match(n.message, /does not answer \(connection failed\)/);
  const s = L.describeFailure({status: 500, error: 'boom'});
  assert.equal(s.state, 'server-error');
  assert.match(s.message, /answered 500: boom/);
});

test('chart series: seconds before the last sample, inside the window; the job total', () => {
  const h = {interval_s: 1, series: {'1': [[100, 5, 10, 20], [101, 6, 11, 21], [102, 7, 12, 22]],
                                     '2': [[101, 1, 1, 1], [102, 2, 2, 2]]}};
  const end = L.historyEnd(h);
  assert.equal(end, 102);
  assert.deepEqual(L.seriesPoints(h.series['1'], 1, end, 1), [{x: -1, y: 6}, {x: 0, y: 7}]);
  assert.deepEqual(L.seriesPoints(h.series['1'], 3, end, 600), [{x: -2, y: 20}, {x: -1, y: 21}, {x: 0, y: 22}]);
  assert.deepEqual(L.jobTotal(h), [[100, 5, 10, 20], [101, 7, 12, 22], [102, 9, 14, 24]]);
  assert.equal(L.historyEnd({series: {}}), -Infinity);
});

test('counter columns read POSIX and STDIO names, prefixed or not', () => {
  const col = (name) => L.COUNTER_COLUMNS.find((c) => c.name === name);
  const posix = {path: '/d/a', module: 'POSIX', counters: {POSIX_BYTES_WRITTEN: 120000}, fcounters: {POSIX_F_WRITE_TIME: 0.5}};
  const stdio = {path: '/d/a', module: 'STDIO', counters: {WRITES: 4}, fcounters: {}};
  assert.equal(L.counterValue(posix, col('BYTES_WRITTEN')), 120000);
  assert.equal(L.counterValue(posix, col('F_WRITE_TIME')), 0.5);
  assert.equal(L.counterValue(stdio, col('WRITES')), 4);
  assert.equal(L.counterValue(stdio, col('READS')), undefined);
  const sorted = L.sortCounters([stdio, {path: '/c', module: 'POSIX'}, posix]);
  assert.deepEqual(sorted.map((r) => r.path + ' ' + r.module), ['/c POSIX', '/d/a POSIX', '/d/a STDIO']);
  assert.notEqual(L.counterKey(posix), L.counterKey(stdio));
  // One entry per process and file: the same file of two processes is two rows.
  assert.notEqual(L.counterKey(Object.assign({}, posix, {pid: 1})), L.counterKey(Object.assign({}, posix, {pid: 2})));
  assert.deepEqual(L.sortCounters([{path: '/a', module: 'POSIX', pid: 9, rank: 1}, {path: '/a', module: 'POSIX', pid: 4, rank: 0}])
    .map((r) => r.pid), [4, 9]);
});

test('a timed job-wide switch says when it ends', () => {
  const at = Date.UTC(2026, 0, 2, 3, 4, 5);
  const job = {mode: 'trace', revert_mode: 'profile', revert_at_wall_ns: at * 1e6};
  assert.equal(L.revertText(job, at - 1000), 'back to profile at ' + new Date(at).toLocaleTimeString());
  assert.equal(L.revertText(job, at), '', 'past: nothing');
  assert.equal(L.revertText({mode: 'trace'}, 0), '');
  assert.equal(L.revertText({mode: 'trace', revert_at_wall_ns: 0, revert_mode: 'profile'}, 0), '');
  assert.equal(L.revertText(null, 0), '');
});

test('tags as key=value', () => {
  assert.equal(L.tagsText({epoch: 1, phase: 'train', x: [1]}), 'epoch=1 phase=train x=[1]');
  assert.equal(L.tagsText(null), '');
});
