/**
 * The arithmetic behind `npm run bench` ("median of 3", ratios to an anchor, costs
 * per request): what the printed table says must follow from the runs.
 */
import { describe, expect, test } from '@jest/globals';
import { fmt, fmtRatio, formatTable, median, medianRun, percentile, perRequest, ratio } from '../../bench/lib/stats.mjs';

describe('median of repeated figures', () => {
  test('odd count: the middle value, whatever the order', () => {
    expect(median([300, 120, 2050])).toBe(300);
  });
  test('even count: the mean of the middle two; missing figures are ignored', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([NaN, 5, 7])).toBe(6);
    expect(median([])).toBeNaN();
  });
  test('the median run carries its own p50 and p99', () => {
    const runs = [{ perSecond: 10, p50: 1, p99: 9 }, { perSecond: 30, p50: 3, p99: 7 }, { perSecond: 20, p50: 2, p99: 8 }];
    expect(medianRun(runs)).toEqual({ perSecond: 20, p50: 2, p99: 8 });
    expect(medianRun([])).toBeUndefined();
  });
});

describe('latency percentiles (nearest rank)', () => {
  const samples = Array.from({ length: 100 }, (_, i) => 100 - i); // 1..100, unsorted
  test('p50 and p99 of 1..100', () => {
    expect(percentile(samples, 0.5)).toBe(50);
    expect(percentile(samples, 0.99)).toBe(99);
    expect(percentile(samples, 1)).toBe(100);
  });
  test('one sample is every percentile; none is NaN', () => {
    expect(percentile([7], 0.99)).toBe(7);
    expect(percentile([], 0.5)).toBeNaN();
  });
});

describe('ratios and costs', () => {
  test('a ratio to the anchor; none without an anchor', () => {
    expect(ratio(2050, 7800)).toBeCloseTo(0.263, 3);
    expect(ratio(5, 0)).toBeNaN();
    expect(ratio(5, NaN)).toBeNaN();
    expect(fmtRatio(ratio(2050, 7800), 'P')).toBe('0.26 P');
    expect(fmtRatio(NaN, 'P')).toBe('–');
  });
  test('a counter growth per request; none without requests or counter', () => {
    expect(perRequest(1000, 1800, 100)).toBe(8);
    expect(perRequest(NaN, 1800, 100)).toBeNaN();
    expect(perRequest(1000, 1800, 0)).toBeNaN();
  });
});

describe('the table', () => {
  test('numbers with thousands separators and fixed decimals; a dash for no figure', () => {
    expect(fmt(50123.4)).toBe('50,123');
    expect(fmt(1.25, 1)).toBe('1.3');
    expect(fmt(NaN)).toBe('–');
    expect(fmt(undefined)).toBe('–');
  });
  test('a Markdown table whose columns line up', () => {
    const text = formatTable(['row', 'req/s'], [['userinfo', '2,050'], ['code exchange', '300']]);
    expect(text.split('\n')).toEqual([
      '| row           | req/s |',
      '|---------------|-------|',
      '| userinfo      | 2,050 |',
      '| code exchange | 300   |',
    ]);
  });
});
