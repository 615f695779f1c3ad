/**
 * What an A/B run of `npm run bench` prints: each side's rounds folded into the main table, and
 * the comparison table whose verdict is judged against the run's own round-to-round spread.
 * Rendered from made-up figures.
 */
import { describe, expect, test } from '@jest/globals';
import { AB_COLUMNS, comparisonTable, roundNotes, sideResults, spread, verdict } from '../../bench/lib/ab-report.mjs';
import type { Figure } from '../../bench/lib/ab-report.mjs';

const SERVICE = 'this service, embedded';
const figure = (side: 'A' | 'B', round: number, row: string, perSecond: number, cpuUs: number, extra: Partial<Figure> = {}): Figure => ({
  target: `${SERVICE}, ${side}`, service: SERVICE, side, round, row,
  perSecond, p50: 4, p99: 20 + round, pg: NaN, redis: NaN, cpuUs, rssMb: 400 + round, notes: [], ...extra,
});
// As an alternating run takes them: per row, round 1 A then B, round 2 B then A.
const FIGURES = [
  figure('A', 1, 'userinfo', 2000, 400), figure('B', 1, 'userinfo', 2100, 390),
  figure('B', 2, 'userinfo', 2060, 380), figure('A', 2, 'userinfo', 1900, 420),
  figure('A', 1, 'exchange', 600, 2000), figure('B', 1, 'exchange', 420, 2900, { notes: ['costs per flow', '2 connection errors or timeouts'] }),
  figure('B', 2, 'exchange', 400, 3000, { notes: ['costs per flow'] }), figure('A', 2, 'exchange', 620, 2100),
];

describe('the spread of a side', () => {
  test('(highest − lowest) / median of its rounds', () => {
    expect(spread([2000, 1900])).toBeCloseTo(100 / 1950, 10);
    expect(spread([10, 12, 11])).toBeCloseTo(2 / 11, 10);
    expect(spread([500, 500])).toBe(0);
  });
  test('one round, or none that counts, has no spread', () => {
    expect(spread([500])).toBeNaN();
    expect(spread([500, NaN])).toBeNaN();
  });
});

describe('the verdict', () => {
  test('"same" when B differs from A by no more than the larger of the two spreads', () => {
    // A moved by 100/1950 = 5.1 %, B by 40/2080 = 1.9 %; B/A = 2080/1950 = 1.067: beyond 5.1 %.
    expect(verdict([2000, 1900], [2100, 2060])).toEqual({ ratio: 2080 / 1950, noise: 100 / 1950, word: 'faster' });
    // A moved by 400/1950 = 20.5 %: the same difference is within the noise.
    expect(verdict([2150, 1750], [2100, 2060]).word).toBe('same');
    expect(verdict([600, 620], [420, 400]).word).toBe('slower');
  });
  test('exactly at the spread is still "same"; identical rounds make any difference count', () => {
    expect(verdict([90, 110], [120, 120]).word).toBe('same'); // B/A = 1.2, A's spread 20/100
    expect(verdict([100, 100], [101, 101]).word).toBe('faster');
    expect(verdict([100, 100], [100, 100]).word).toBe('same');
  });
  test('one round per side gives no verdict, nor does a side without figures', () => {
    expect(verdict([2000], [2100]).word).toBe('–');
    expect(verdict([2000, 1900], []).word).toBe('–');
  });
});

describe('the comparison table', () => {
  const lines = comparisonTable(FIGURES, (row) => ({ exchange: 'code exchange' })[row] ?? row).split('\n');

  test('its columns: each side\'s req/s, p99 and CPU a request, the ratios B/A, the spread, the verdict', () => {
    expect(lines[0]!.split('|').slice(1, -1).map((cell) => cell.trim())).toEqual(AB_COLUMNS);
    expect(AB_COLUMNS).toEqual(['target', 'row', 'A req/s', 'B req/s', 'B/A req/s', 'A p99 ms', 'B p99 ms', 'A CPU µs/req', 'B CPU µs/req', 'B/A CPU/req', 'spread', 'verdict']);
  });

  test('one line per service and row, the medians of each side\'s rounds', () => {
    const cells = lines.slice(2).map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
    expect(cells).toEqual([
      [SERVICE, 'userinfo', '1,950', '2,080', '1.07', '21.5', '21.5', '410', '385', '0.94', '±5.1 %', 'faster'],
      [SERVICE, 'code exchange', '610', '410', '0.67', '21.5', '21.5', '2,050', '2,950', '1.44', '±4.9 %', 'slower'],
    ]);
  });

  test('lines up as plain text too', () => {
    expect(new Set(lines.map((line) => line.length)).size).toBe(1);
  });

  test('one round: no spread and no verdict, shown as dashes', () => {
    const cells = comparisonTable(FIGURES.filter((f) => f.round === 1)).split('\n')[2]!.split('|').slice(1, -1).map((cell) => cell.trim());
    expect(cells.slice(-2)).toEqual(['–', '–']);
    expect(cells[4]).toBe('1.05');
  });
});

describe('the sides in the main table', () => {
  test('each side\'s rounds as one result: medians, the peak RSS, the rounds\' notes; A\'s rows, then B\'s', () => {
    const results = sideResults(FIGURES);
    expect(results.map((r) => `${r.target} / ${r.row}`)).toEqual([
      `${SERVICE}, A / userinfo`, `${SERVICE}, A / exchange`, `${SERVICE}, B / userinfo`, `${SERVICE}, B / exchange`,
    ]);
    expect(results[3]).toEqual({
      target: `${SERVICE}, B`, row: 'exchange', perSecond: 410, p50: 4, p99: 21.5, pg: NaN, redis: NaN, cpuUs: 2950, rssMb: 402,
      notes: ['costs per flow', 'round 1: 2 connection errors or timeouts'], // said in every round: once
    });
  });
  test('a note of some rounds only is marked with each of its rounds', () => {
    expect(roundNotes([{ round: 1, notes: ['a', 'b'] }, { round: 2, notes: ['b'] }, { round: 3, notes: ['a', 'b'] }]))
      .toEqual(['round 1: a', 'b', 'round 3: a']);
    expect(roundNotes([{ round: 1, notes: [] }, { round: 2, notes: [] }])).toEqual([]);
  });
  test('no figures, no results (a run without a comparison)', () => {
    expect(sideResults([])).toEqual([]);
  });
});
