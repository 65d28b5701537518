// The report charts' pure logic (StrataPlots in web/report_plots.js) under
// `node --test`: request size classes and their bounds, ticks, extents, the
// end of the value axis, labels cut to fit.
import assert from 'node:assert/strict';
import {createRequire} from 'node:module';
import test from 'node:test';

const require = createRequire(import.meta.url);
const P = require('../../web/report_plots.js');

test('size classes cover every size up to the largest, in order', () => {
  const max = 1 << 20;
  assert.equal(P.sizeClass(0, max), 0);
  assert.equal(P.sizeClass(max, max), P.CLASSES - 1);
  let last = 0;
  for (let s = 1; s <= max; s *= 2) {
    const k = P.sizeClass(s, max);
    assert.ok(k >= last && k < P.CLASSES, s + ' -> ' + k);
    last = k;
  }
});

test('each class bound holds the sizes that fall in it', () => {
  const max = 1 << 20;
  for (let k = 0; k < P.CLASSES; k++) {
    const [lo, hi] = P.classBounds(k, max);
    assert.ok(lo <= hi, k);
    if (lo > 0) assert.equal(P.sizeClass(lo, max), k, 'lo of ' + k);
    assert.equal(P.sizeClass(hi, max), k, 'hi of ' + k);
  }
  assert.equal(P.classBounds(P.CLASSES - 1, max)[1], max);
});

test('ticks: 1, 2 or 5 times a power of ten, inside the range', () => {
  assert.deepEqual(P.ticks(0, 100, 5), [0, 20, 40, 60, 80, 100]);
  assert.deepEqual(P.ticks(0, 1, 4), [0, 0.5, 1]);
  assert.deepEqual(P.ticks(40001, 40256, 5), [40100, 40200]);  // a step of 100 (51 raw)
  for (const t of P.ticks(0.013, 1.27, 8)) assert.ok(t >= 0.013 && t <= 1.27, t);
});

test('extent widens a single value and survives no values', () => {
  assert.deepEqual(P.extent([3, 1, 2]), [1, 3]);
  assert.deepEqual(P.extent([5, 5]), [4, 6]);
  assert.deepEqual(P.extent([]), [0, 1]);
});

test('the value axis ends at the largest bar or stack, on a tick', () => {
  const series = [{values: [3, 10]}, {values: [4, 1]}];
  assert.equal(P.valueMax(series, false), 10);
  assert.equal(P.valueMax(series, true), 15);  // stacks of 7 and 11, ticks of 5
  assert.equal(P.valueMax(series, true, 100), 100);
  assert.equal(P.valueMax([{values: [0, 0]}], false), 1);
  assert.equal(P.valueMax([{values: [5650000]}], false), 6000000);
});

test('labels are cut with an ellipsis to fit', () => {
  const measure = (t) => t.length * 10;
  assert.equal(P.fit('short', 100, measure), 'short');
  const cut = P.fit('DataLoader worker 1 (train, epoch 2)', 100, measure);
  assert.ok(measure(cut) <= 100 && cut.endsWith('\u2026'), cut);
  assert.equal(cut, 'DataLoade\u2026');  // 10 characters of 10 pixels
});

test('points are grouped by size class, none dropped', () => {
  const pts = [[0, 0, 1, 7], [1, 10, 1000, 8], [2, 20, 1 << 20, 9]];
  const classes = P.classify(pts, (p) => p[3], 1 << 20);
  assert.equal(classes.reduce((n, c) => n + c.length, 0), pts.length);
  assert.deepEqual(classes[P.CLASSES - 1], [[9, 20]]);
});
