/**
 * The bare pass: the test files that touch system tools, run as on a fresh machine that has only
 * Node, PostgreSQL and Redis, so that a file which reaches a Debian package some other way than
 * test/helpers/system-tool.ts fails here even where the package is installed. Every program of
 * test/helpers/system-tools.mjs is hidden: from PATH (a folder of links to everything else on it;
 * the python3 without it has no prometheus_client either) and from the tests' own lookups by
 * path (HIDE_SYSTEM_TOOLS=1). CI is unset, so a missing program skips with its one line.
 *
 * Usage: node scripts/test-without-tools.mjs [jest options]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { filesTouchingTools, SYSTEM_TOOLS } from '../test/helpers/system-tools.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const hidden = Object.values(SYSTEM_TOOLS).flatMap((tool) => tool.programs);
/** `git-upload-pack` and `python3.11` go with `git` and `python3`. */
const isHidden = (name) => hidden.some((program) => name === program || name.startsWith(`${program}-`) || name.startsWith(`${program}.`));

const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-bare-path-'));
try {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    let names;
    try {
      names = fs.readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const link = path.join(bin, name);
      if (isHidden(name) || fs.existsSync(link)) continue; // the first on PATH wins, as it would
      fs.symlinkSync(path.join(dir, name), link);
    }
  }
  const env = { ...process.env, PATH: bin, HIDE_SYSTEM_TOOLS: '1' };
  delete env.CI;
  const files = filesTouchingTools();
  process.stderr.write(`bare pass: ${files.length} test files, without ${hidden.join(', ')}\n`);
  const { status, signal } = spawnSync(process.execPath, [
    '--disable-warning=ExperimentalWarning', '--experimental-vm-modules', 'node_modules/jest/bin/jest.js', ...files, ...process.argv.slice(2),
  ], { cwd: ROOT, env, stdio: 'inherit' });
  process.exitCode = status ?? (signal ? 1 : 0);
} finally {
  fs.rmSync(bin, { recursive: true, force: true });
}
