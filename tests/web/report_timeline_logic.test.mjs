// The report timeline's pure logic (StrataTimeline in web/report_timeline.js)
// under `node --test`: which columns each pixel shows, the level a pixel takes
// from them, zoom and pan bounds, ticks.
import assert from 'node:assert/strict';
import {createRequire} from 'node:module';
import test from 'node:test';

const require = createRequire(import.meta.url);
const TL = require('../../web/report_timeline.js');

test('each pixel shows the columns under it, none left out', () => {
  // 10 columns of 0.1 s on 4 pixels: 2.5 columns per pixel.
  const px = TL.pixelColumns(0, 1, 4, 0.1, 10);
  assert.deepEqual([...px.from], [0, 2, 5, 7]);
  assert.deepEqual([...px.to], [2, 4, 7, 9]);
  // Zoomed into one column: every pixel shows it.
  const z = TL.pixelColumns(0.3, 0.4, 5, 0.1, 10);
  assert.deepEqual([...z.from], [3, 3, 3, 3, 3]);
  assert.deepEqual([...z.to], [3, 3, 3, 3, 3]);
});

test('a pixel takes the busiest of its columns, so one short call stays visible', () => {
  const levels = Uint8Array.from([0, 0, 1, 0, 0, 61, 0, 0, 0, 0]);
  const px = TL.pixelColumns(0, 1, 4, 0.1, 10);
  assert.deepEqual([...TL.pixelLevels(levels, px)], [1, 1, 61, 0]);  // column 2 lies under pixels 0 and 1
});

test('zoom keeps the time under the cursor in place, inside the run, above the minimum span', () => {
  assert.deepEqual(TL.zoom([0, 10], 0.5, 5, 10, 0.1), [2.5, 7.5]);
  assert.deepEqual(TL.zoom([0, 10], 0.5, 0, 10, 0.1), [0, 5]);
  assert.deepEqual(TL.zoom([2, 4], 0.01, 3, 10, 0.5), [2.75, 3.25]);
  assert.deepEqual(TL.zoom([2, 4], 100, 3, 10, 0.5), [0, 10]);
  const right = TL.zoom([8, 10], 2, 10, 10, 0.5);
  assert.deepEqual(right, [6, 10]);
});

test('pan stops at the ends of the run', () => {
  assert.deepEqual(TL.pan([2, 4], 1, 10), [3, 5]);
  assert.deepEqual(TL.pan([2, 4], -5, 10), [0, 2]);
  assert.deepEqual(TL.pan([2, 4], 50, 10), [8, 10]);
});

test('ticks: about n steps of 1, 2 or 5 times a power of ten', () => {
  assert.equal(TL.tickStep(10, 6), 2);
  assert.equal(TL.tickStep(0.03, 6), 0.005);
  assert.equal(TL.timeText(0.005 * 3, 0.005), '0.015 s');
});
