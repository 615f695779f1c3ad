/**
 * `npm run bench -- --markdown docs/performance.md`: the run's header line and table go between
 * the page's two marker comments, every byte around them kept; a page that cannot take them is
 * refused before anything starts, on one line, exit 2. Fast: the table is rendered from made-up
 * results, and only the option check runs the bench's command line.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { END, markdownBlock, markedFileProblem, markerProblem, replaceMarked, START, writeMarked } from '../../bench/lib/markdown.mjs';
import { headerLine, resultsTable, startRssLines, targetLines } from '../../bench/lib/report.mjs';
import type { Result } from '../../bench/lib/report.mjs';
import { ROOT } from '../helpers/build.js';

const result = (target: string, row: string, perSecond: number, cpuUs: number): Result => ({
  target, row, perSecond, p50: 4.2, p99: 16.4, pg: NaN, redis: NaN, cpuUs, rssMb: 150, notes: [],
});
const RESULTS = [
  result('bare Koa', 'small JSON body', 29_036, 34),
  result('P: stock oidc-provider 9, Map', 'userinfo', 5692, 189),
  result('this service, embedded', 'userinfo', 2722, 389),
];
const SETTINGS = { load: 'wrk', connections: 32, warmup: 3, runs: 3, seconds: 8, quick: false };
const HEADER = headerLine(SETTINGS, { date: new Date('2026-11-26T06:04:44.603Z'), cpus: [{ model: 'AMD EPYC' }, { model: 'AMD EPYC' }], node: 'v20.20.2' });
const TABLE = resultsTable(RESULTS, NaN);
const BLOCK = markdownBlock({ header: HEADER, table: TABLE, after: startRssLines({ 'this service, embedded': 372.4 }), command: 'npm run bench', build: 'a265de1' });

const PAGE = [
  '# Performance',
  '',
  'How the bench measures (kept as written).',
  '',
  START,
  'the previous run',
  END,
  '',
  'Reading the columns (kept as written).',
  '',
].join('\n');

describe('the block a run writes', () => {
  test('the printed header line and the printed table, as they are', () => {
    expect(HEADER).toBe('2026-11-26T06:04:44.603Z · 2 × AMD EPYC · node v20.20.2 · wrk, 32 connections · warm-up 3 s, then the median of 3 × 8 s');
    expect(BLOCK).toContain(`**${HEADER}**`);
    expect(BLOCK).toContain(TABLE);
    expect(TABLE.split('\n')[4]).toMatch(/^\| this service, embedded +\| userinfo +\| 2,722 +\| 4\.2 +\| 16\.4 +\| 0\.48 P +\| – +\| – +\| 389 +\| 150 +\| +\|$/);
    expect(BLOCK.split('\n')[0]).toBe('Written by `npm run bench`, build `a265de1`:');
    expect(BLOCK).toContain('\n- RSS of this service, embedded right after start (one login and one exchange): 372 MB');
  });

  test('an A/B run: its comparison\'s title and table after the main table, as printed', () => {
    const comparison = { title: 'A/B in this run, 2 rounds per row (A then B, then B then A): A = X=a, B = X=b', table: '| target | verdict |\n|---|---|\n| this service, embedded | same |' };
    const block = markdownBlock({ header: HEADER, table: TABLE, after: [], comparison });
    expect(block.endsWith(`\n\n**${comparison.title}**\n\n${comparison.table}`)).toBe(true);
    expect(block.indexOf(TABLE)).toBeLessThan(block.indexOf(comparison.title));
    expect(BLOCK).not.toContain('A/B');
  });
});

describe('between the markers', () => {
  test('replaces only what lies between them; the text around is kept byte for byte', () => {
    const written = replaceMarked(PAGE, BLOCK);
    const [before, rest] = written.split(START) as [string, string];
    const [between, after] = rest.split(END) as [string, string];
    expect(before).toBe(PAGE.split(START)[0]);
    expect(after).toBe(PAGE.split(END)[1]);
    expect(between).toBe(`\n${BLOCK}\n`);
    expect(written).not.toContain('the previous run');
  });

  test('a second run replaces the first run\'s table, not adds to it', () => {
    const once = replaceMarked(PAGE, BLOCK);
    expect(replaceMarked(once, BLOCK)).toBe(once);
    const next = replaceMarked(once, 'another run');
    expect(next).not.toContain(TABLE);
    expect(next.split(START)[0]).toBe(PAGE.split(START)[0]);
  });

  test('a page without both markers, once each and in order, cannot take a table', () => {
    expect(markerProblem(PAGE)).toBeUndefined();
    expect(markerProblem('# no markers')).toBe(`has no ${START} marker`);
    expect(markerProblem(`${START}\n`)).toBe(`has no ${END} marker`);
    expect(markerProblem(`${START}${START}${END}`)).toBe(`has ${START} 2 times (once only)`);
    expect(markerProblem(`${END}\n${START}`)).toBe(`has ${END} before ${START}`);
    expect(() => replaceMarked('# no markers', BLOCK)).toThrow(`has no ${START} marker`);
  });
});

describe('the file', () => {
  let dir: string;
  beforeAll(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-markdown-')); });
  afterAll(() => { fs.rmSync(dir, { recursive: true, force: true }); });

  test('is rewritten in place between its markers', () => {
    const file = path.join(dir, 'performance.md');
    fs.writeFileSync(file, PAGE);
    expect(markedFileProblem(file)).toBeUndefined();
    writeMarked(file, BLOCK);
    expect(fs.readFileSync(file, 'utf8')).toBe(replaceMarked(PAGE, BLOCK));
  });

  test('a missing file, a folder or a page without markers is named in one phrase', () => {
    const plain = path.join(dir, 'plain.md');
    fs.writeFileSync(plain, '# Performance\n');
    expect(markedFileProblem(path.join(dir, 'missing.md'))).toBe(`cannot read ${path.join(dir, 'missing.md')} (no such file)`);
    expect(markedFileProblem(dir)).toBe(`cannot read ${dir} (a directory)`);
    expect(markedFileProblem(plain)).toBe(`${plain} has no ${START} marker`);
    expect(markedFileProblem('')).toBe('needs a file');
  });

  test('npm run bench refuses such a page before anything starts: one line, the usage, exit 2; --help names the option', async () => {
    const run = (...args: string[]) => promisify(execFile)(process.execPath, ['bench/run.mjs', ...args], { cwd: ROOT, timeout: 30_000 });
    const plain = path.join(dir, 'plain.md');
    fs.writeFileSync(plain, '# Performance\n');
    for (const [file, reason] of [
      [path.join(dir, 'missing.md'), `bench: --markdown: cannot read ${path.join(dir, 'missing.md')} (no such file)`],
      [plain, `bench: --markdown: ${plain} has no ${START} marker`],
    ] as const) {
      const failure = await run('--markdown', file).then(() => null, (error: { code: number; stderr: string }) => error);
      expect(failure?.code).toBe(2);
      expect(failure?.stderr.split('\n')[0]).toBe(reason);
      expect(failure?.stderr).toContain('Usage: npm run bench');
      expect(failure?.stderr).not.toMatch(/\n +at /); // no stack
    }
    expect(fs.readFileSync(plain, 'utf8')).toBe('# Performance\n');
    const { stdout } = await run('--help');
    expect(stdout).toContain('[--markdown file]');
    expect(stdout).toContain(`--markdown file: rewrites the part of file between ${START} and`);
  }, 60_000);
});

describe('what a run says of each target', () => {
  const row = (target: string, name: string, perSecond: number, extra: Partial<Result> = {}): Result => ({
    target, row: name, perSecond, p50: 3, p99: 20, pg: 0, redis: 4, cpuUs: 500, rssMb: 180, notes: [], ...extra,
  });
  const P = 'P: stock oidc-provider 9, Map';
  const PG = 'this service, Postgres + Redis';
  const RUN = [
    row(P, 'userinfo', 8000), row(P, 'exchange', 2000),
    row(PG, 'userinfo', 4000), row(PG, 'exchange', 1600, { p99: 58.3 }), row(PG, 'silent', 1950),
    row(PG, 'login', 80), row(PG, '429', 15_000, { cpuUs: 40 }),
  ];

  test('met, missed with the figure, or not measured when the run lacks the row or the load', () => {
    const lines = targetLines(RUN, 100, { connections: 32 });
    expect(lines).toContain('Postgres + Redis: userinfo ≥ 0.8 P: missed (0.50 P)');
    expect(lines).toContain('Postgres + Redis: code exchange ≥ 0.7 P: met (0.80 P)');
    expect(lines).toContain('fresh login flows ≥ 0.7 × the argon2id verify rate: met (Postgres + Redis 0.80 ×)');
    expect(lines).toContain('silent authorize ≥ 1,000/s: met (Postgres + Redis 1,950/s)');
    expect(lines).toContain('p99 ≤ 50 ms at 32 connections, Postgres + Redis: missed (userinfo 20.0 ms, exchange 58.3 ms)');
    expect(lines).toContain('embedded: userinfo ≥ 0.5 P: not measured');
    expect(lines).toContain('a 429 refusal ≥ 10× cheaper than a served token request: met (Postgres + Redis 12.5×)');
    expect(lines).toContain('RSS under the bench load on Postgres + Redis ≤ 200 MB: met (at most 180 MB)');
    expect(targetLines(RUN, 100, { connections: 4 })).toContain('p99 ≤ 50 ms at 32 connections, Postgres + Redis: not measured (4 connections, not 32)');
  });

  test('the page gets them as a list after the table', () => {
    const block = markdownBlock({ header: HEADER, table: TABLE, targets: targetLines(RUN, 100, { connections: 32 }) });
    expect(block).toContain('**Targets, this run** ([targets](#targets)):\n\n- Postgres + Redis: userinfo ≥ 0.8 P: missed (0.50 P)\n');
  });
});
