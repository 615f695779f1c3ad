/**
 * `npm run build` for tests that spawn `node dist/...`. Jest runs test files in parallel, and a
 * build rewrites every file in dist/ (truncate, then write): a sibling file's build could hand
 * a running `node dist/cli.js` a half-written module. So builds take a lock, and a build is
 * skipped when dist/ is already newer than everything it is built from.
 *
 * @example beforeAll(async () => { await buildDist(); });
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { isAlive } from '../../src/store/embedded-postgres.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const DIST = path.join(ROOT, 'dist');

const STAMP = path.join(DIST, '.test-build-stamp');
const LOCK = path.join(os.tmpdir(), `oauth-service-build-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}.lock`);
const INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];

function newestMtime(file: string): number {
  const stat = fs.statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...fs.readdirSync(file).map((name) => newestMtime(path.join(file, name))));
}

function isFresh(): boolean {
  if (!fs.existsSync(STAMP) || !fs.existsSync(path.join(DIST, 'launch.cjs')) || !fs.existsSync(path.join(DIST, 'cli.js'))) return false;
  const stamp = fs.statSync(STAMP).mtimeMs;
  return INPUTS.every((input) => newestMtime(path.join(ROOT, input)) < stamp);
}

async function withLock<T>(use: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      fs.writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(fs.readFileSync(LOCK, 'utf8'));
      if (owner && !isAlive(owner)) fs.rmSync(LOCK, { force: true }); // left by a killed run
      if (attempt > 600) throw new Error(`build lock ${LOCK} held by process ${owner} for too long`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  try {
    return await use();
  } finally {
    fs.rmSync(LOCK, { force: true });
  }
}

/** Runs `npm run build` unless dist/ is up to date; never two builds at once. */
export async function buildDist(): Promise<void> {
  await withLock(async () => {
    if (isFresh()) return;
    const startedAt = Date.now();
    await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: ROOT });
    fs.writeFileSync(STAMP, '');
    // A source saved during the build must not count as built.
    fs.utimesSync(STAMP, new Date(startedAt), new Date(startedAt));
  });
}
