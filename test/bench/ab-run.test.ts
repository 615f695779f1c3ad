/**
 * `npm run bench -- --against <git-ref>` end to end on one row (embedded, 4 connections, 1 s,
 * 2 rounds): the ref is built in a temporary git worktree, both sides run, the main table and
 * the A/B table come out (on the terminal and with --markdown), and the worktree is gone
 * afterwards, also after Ctrl-C. Bad comparison options stop the bench before it starts.
 * It asserts no speed, only that the instrument works.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { END, START } from '../../bench/lib/markdown.mjs';
import { buildDist, ROOT } from '../helpers/build.js';
import { tempDataDir } from '../helpers/services.js';
import { describeWith, GIT_CHECKOUT, program } from '../helpers/system-tool.js';

// --against builds another commit of this clone.
const withCheckout = describeWith(GIT_CHECKOUT);

let dir: string;
/** The bench's temporary folders (its worktree among them) go under the test's own TMPDIR, removed afterwards. */
const tmpdir = () => path.join(dir, 'tmp');
const env = () => ({ ...process.env, TMPDIR: tmpdir() });
const bench = (...args: string[]) => promisify(execFile)(process.execPath, ['bench/run.mjs', ...args], { cwd: ROOT, env: env(), timeout: 240_000 });
const QUICK = ['--quick', '--no-build', '--mode', 'embedded', '--rows', 'discovery', '--connections', '4', '--seconds', '1', '--warmup', '1'];
/** The Markdown tables in a text: each run of lines that start with "|". */
function tablesIn(text: string): string[] {
  const tables: string[][] = [];
  let previous = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('|')) {
      if (!previous.startsWith('|')) tables.push([]);
      tables.at(-1)!.push(line);
    }
    previous = line;
  }
  return tables.map((table) => table.join('\n'));
}
const cellsOf = (line: string) => line.split('|').slice(1, -1).map((cell) => cell.trim());
/** The worktree a run named in its log, and whether git or the disk still know it. */
const worktreeOf = (stderr: string) => /checking \w+ out into (\S+)/.exec(stderr)?.[1];
const stillThere = (worktree: string) => fs.existsSync(worktree)
  || execFileSync(program(GIT_CHECKOUT), ['worktree', 'list', '--porcelain'], { cwd: ROOT, encoding: 'utf8' }).includes(worktree)
  || fs.readdirSync(tmpdir()).some((name) => name.startsWith('oauth-bench-against-'));

withCheckout('npm run bench --against', () => {
  beforeAll(async () => {
    dir = tempDataDir('bench-ab'); // in memory where there is room: the bench's embedded databases and the other build go there
    fs.mkdirSync(tmpdir());
    await buildDist();
  }, 120_000);
  afterAll(() => { fs.rmSync(dir, { recursive: true, force: true }); });

  test('bad comparison options: one line and the usage, exit 2, before anything starts', async () => {
    for (const [args, reason] of [
      [['--against', 'no-such-ref-here'], 'bench: --against: "no-such-ref-here" names no commit of this repository (a branch, tag or commit)'],
      [['--variants', 'DATABASE_BATCHING'], 'bench: --variants takes NAME=a,b (a variable and its two values), got "DATABASE_BATCHING"'],
      [['--variants', 'DATABASE_BATCHING=turn'], 'bench: --variants takes two values, NAME=a,b, got "DATABASE_BATCHING=turn"'],
      [['--against', 'HEAD', '--variants', 'DATABASE_BATCHING=turn,off'], 'bench: --against and --variants each name both sides: give one of them'],
      [['--variants', 'DATABASE_BATCHING=turn,off', '--rounds', '0'], 'bench: --rounds must be a whole number of at least 1, got "0"'],
      [['--rounds', '3'], 'bench: --rounds needs --against or --variants'],
    ] as const) {
      const failure = await bench(...args).then(() => null, (error: { code: number; stderr: string }) => error);
      expect(failure?.code).toBe(2);
      expect(failure?.stderr.split('\n')[0]).toBe(reason);
      expect(failure?.stderr).toContain('Usage: npm run bench');
      expect(failure?.stderr).not.toContain('[bench]'); // nothing started: no build, no worktree
    }
    expect(fs.readdirSync(tmpdir())).toEqual([]); // not even the run's temporary folder
    const { stdout } = await bench('--help');
    expect(stdout).toContain('[--against git-ref | --variants NAME=a,b] [--rounds 2]');
  }, 60_000);

  test('HEAD against HEAD: both sides in the main table, one A/B line a row, the worktree removed', async () => {
    const page = path.join(dir, 'performance.md');
    fs.writeFileSync(page, `# Performance\n\n${START}\nthe previous run\n${END}\n`);
    // The two sides run side by side, each with its own metrics listener (the port given only turns them on).
    const { stdout, stderr } = await bench(...QUICK, '--against', 'HEAD', '--rounds', '2', '--markdown', page, '--env', 'METRICS_PORT=9464');
    const tables = tablesIn(stdout);
    expect(tables).toHaveLength(2);
    const main = tables[0]!.split('\n').slice(2).map(cellsOf);
    expect(main.map(([target, row]) => `${target} / ${row}`)).toEqual([
      'bare Koa / small JSON body',
      'P: stock oidc-provider 9, Map / discovery',
      'this service, embedded, A / discovery',
      'this service, embedded, B / discovery',
    ]);
    for (const row of main) expect(row[10]).toBe(''); // notes: no unexpected answers, no errors

    expect(stdout).toMatch(/\nA\/B in this run, 2 rounds per row \(A then B, then B then A\): A = this checkout \([^)]+\), B = HEAD \([0-9a-f]{7}\)\n/);
    const [header, , line, ...more] = tables[1]!.split('\n');
    expect(more).toEqual([]);
    expect(cellsOf(header!)).toEqual(['target', 'row', 'A req/s', 'B req/s', 'B/A req/s', 'A p99 ms', 'B p99 ms', 'A CPU µs/req', 'B CPU µs/req', 'B/A CPU/req', 'spread', 'verdict']);
    const cells = cellsOf(line!);
    expect(cells.slice(0, 2)).toEqual(['this service, embedded', 'discovery']);
    expect(cells[4]).toMatch(/^\d+\.\d\d$/);
    expect(cells[9]).toMatch(/^\d+\.\d\d$/);
    expect(cells[10]).toMatch(/^±[\d,]+\.\d %$/);
    expect(['same', 'faster', 'slower']).toContain(cells[11]);
    // Each side measured twice, in turns.
    expect(stderr.match(/this service, embedded, [AB] discovery, round \d/g)).toEqual([
      'this service, embedded, A discovery, round 1', 'this service, embedded, B discovery, round 1',
      'this service, embedded, B discovery, round 2', 'this service, embedded, A discovery, round 2',
    ]);

    const written = fs.readFileSync(page, 'utf8');
    expect(written).toContain(tables[0]);
    expect(written).toContain(tables[1]);
    expect(written).toMatch(/\*\*A\/B in this run, 2 rounds per row/);

    const worktree = worktreeOf(stderr);
    expect(worktree?.startsWith(tmpdir())).toBe(true);
    expect(stillThere(worktree!)).toBe(false);
    expect(fs.existsSync(path.join(ROOT, 'node_modules', '.bin'))).toBe(true); // its symlink went, not what it pointed to
  }, 240_000);

  test('Ctrl-C while the other build is prepared: exit 130, the worktree removed', async () => {
    const child = spawn(process.execPath, ['bench/run.mjs', ...QUICK, '--against', 'HEAD'], { cwd: ROOT, env: env(), stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk;
        if (stderr.includes('--against: npm run')) resolve(); // checked out, a build step running
      });
      void exited.then(() => reject(new Error(`the bench ended before its build step: ${stderr}`)));
    });
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('SIGINT: removing the worktree');
    expect(worktreeOf(stderr)?.startsWith(tmpdir())).toBe(true);
    expect(stillThere(worktreeOf(stderr)!)).toBe(false);
    expect(fs.existsSync(path.join(ROOT, 'node_modules', '.bin'))).toBe(true);
  }, 60_000);
});
