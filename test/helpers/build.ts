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
import { withFileLock } from './file-lock.js';

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

/** Runs `npm run build` unless dist/ is up to date; never two builds at once. */
export async function buildDist(): Promise<void> {
  await withFileLock(LOCK, async () => {
    if (isFresh()) return;
    const startedAt = Date.now();
    await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: ROOT });
    fs.writeFileSync(STAMP, '');
    // A source saved during the build must not count as built.
    fs.utimesSync(STAMP, new Date(startedAt), new Date(startedAt));
  }, 120_000);
}
