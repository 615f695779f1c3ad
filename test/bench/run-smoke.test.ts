/**
 * `npm run bench` end to end on a tiny row set (embedded mode, 4 connections, 1 s): every
 * process starts, every anchor and row answers what it should, and one table comes out.
 * It asserts no speed (speed lives in the printed figures), only that the instrument works.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { buildDist, ROOT } from '../helpers/build.js';
import { tempDataDir } from '../helpers/services.js';

/** The bench's temporary folders (its embedded database among them), in memory where there is room. */
let tmpdir: string;
beforeAll(async () => {
  tmpdir = tempDataDir('bench-smoke');
  await buildDist();
}, 120_000);
afterAll(() => { fs.rmSync(tmpdir, { recursive: true, force: true }); });

describe('npm run bench --quick', () => {
  test('prints one table with the anchors and this service, no unexpected answers', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      'bench/run.mjs', '--quick', '--no-build', '--mode', 'embedded', '--rows', 'discovery,userinfo',
      '--connections', '4', '--seconds', '1', '--warmup', '1',
    ], { cwd: ROOT, env: { ...process.env, TMPDIR: tmpdir }, timeout: 240_000 }); // roomy: a loaded machine slows every process it starts
    const lines = stdout.split('\n').filter((line) => line.startsWith('| '));
    expect(lines[0]).toMatch(/^\| target +\| row +\| req\/s +\| p50 ms +\| p99 ms +\| vs anchor +\| PG xacts\/req +\| Redis cmds\/req +\| CPU µs\/req +\| RSS MB +\| notes/);
    const rows = lines.slice(1).map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
    expect(rows.map(([target, row]) => `${target} / ${row}`)).toEqual([
      'bare Koa / small JSON body',
      'P: stock oidc-provider 9, Map / discovery',
      'P: stock oidc-provider 9, Map / userinfo',
      'this service, embedded / discovery',
      'this service, embedded / userinfo',
    ]);
    for (const row of rows) {
      expect(Number(row[2]!.replace(/,/g, ''))).toBeGreaterThan(0); // req/s
      expect(row[10]).toBe(''); // notes: no unexpected answers, no errors
    }
    expect(rows[4]![5]).toMatch(/^\d+\.\d\d P$/); // this service's userinfo against P's
  }, 250_000);

  test('a bad option is a one-line reason and the usage, exit 2; --help prints the usage', async () => {
    const run = (...args: string[]) => promisify(execFile)(process.execPath, ['bench/run.mjs', ...args], { cwd: ROOT, timeout: 30_000 });
    for (const [args, reason] of [
      [['--bogus'], "bench: Unknown option '--bogus'"],
      [['--rows', 'userinfo,nope'], 'bench: --rows: unknown row "nope"'],
      [['--runs', 'x'], 'bench: --runs must be a whole number of at least 1, got "x"'],
      [['--mode', 'cloud'], 'bench: --mode takes pg, pgbouncer, embedded (comma-separated) or all, got "cloud"'],
      [['--mode', 'pg,nope'], 'bench: --mode takes pg, pgbouncer, embedded (comma-separated) or all, got "nope"'],
      [['--env', 'PORT=4000'], 'bench: --env PORT: the bench gives each service its own PORT, BASE_URL, DATA_DIR'],
      [['--env', 'DATA_DIR=/tmp/x'], 'bench: --env DATA_DIR: the bench gives each service its own PORT, BASE_URL, DATA_DIR'],
      [['--variants', 'DATA_DIR=/tmp/a,/tmp/b'], 'bench: --variants DATA_DIR: the bench gives each service its own PORT, BASE_URL, DATA_DIR'],
    ] as const) {
      const failure = await run(...args).then(() => null, (error: { code: number; stderr: string }) => error);
      expect(failure?.code).toBe(2);
      expect(failure?.stderr.split('\n')[0]).toContain(reason);
      expect(failure?.stderr).toContain('Usage: npm run bench');
      expect(failure?.stderr).not.toMatch(/\n +at /); // no stack
    }
    const { stdout } = await run('--help');
    expect(stdout).toMatch(/^Usage: npm run bench .*--rows discovery,userinfo,exchange,exchange-pkjwt,refresh,silent,login,429/);
  }, 60_000);
});
