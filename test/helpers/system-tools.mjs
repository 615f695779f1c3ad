/**
 * The programs beyond Node, PostgreSQL and Redis that tests may use (Debian packages), one line
 * each: what a person calls it, the program names to hide for a bare run, the command that
 * installs it, and where it is found (its command or path; undefined when absent).
 *
 * Plain JavaScript so that scripts/test-without-tools.mjs reads the same table. Tests reach these
 * programs only through test/helpers/system-tool.ts (test/architecture/system-tools.test.ts
 * checks it).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGBOUNCER_PATH } from '../../bench/lib/pgbouncer.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `command` when `command args…` runs at all (wrk -v exits 1: present is what counts). */
const starts = (command, ...args) => () => (spawnSync(command, args, { stdio: 'ignore' }).error ? undefined : command);
/** `command` when `command args…` exits 0. */
const succeeds = (command, args, options = {}) => () => (spawnSync(command, args, { stdio: 'ignore', ...options }).status === 0 ? command : undefined);
const file = (at) => () => (fs.existsSync(at) ? at : undefined);

export const SYSTEM_TOOLS = {
  // PATH's python3 may be a pyenv one without Debian's packages: then Debian's own.
  PROMETHEUS_PARSER: { tool: 'python3 with prometheus_client (the reference Prometheus parser)', programs: ['python3'], install: 'apt-get install python3-prometheus-client',
    find: () => ['python3', '/usr/bin/python3'].find((python) => spawnSync(python, ['-c', 'import prometheus_client'], { stdio: 'ignore' }).status === 0) },
  CHROMIUM: { tool: "Debian's Chromium (/usr/bin/chromium)", programs: ['chromium'], install: 'apt-get install chromium', find: file('/usr/bin/chromium') },
  WRK: { tool: "Debian's wrk", programs: ['wrk'], install: 'apt-get install wrk', find: starts('wrk', '-v') },
  PGBOUNCER: { tool: `Debian's pgbouncer (${PGBOUNCER_PATH})`, programs: ['pgbouncer'], install: 'apt-get install pgbouncer', find: file(PGBOUNCER_PATH) },
  REDIS_SENTINEL: { tool: "Debian's redis-sentinel (/usr/bin/redis-sentinel)", programs: ['redis-sentinel'], install: 'apt-get install redis-sentinel', find: file('/usr/bin/redis-sentinel') },
  NGINX: { tool: "Debian's nginx", programs: ['nginx'], install: 'apt-get install nginx-light', find: starts('nginx', '-v') },
  OPENSSL: { tool: "Debian's openssl", programs: ['openssl'], install: 'apt-get install openssl', find: succeeds('openssl', ['version']) },
  GIT_CHECKOUT: { tool: 'git, in a clone of the repository', programs: ['git'], install: 'apt-get install git; a clone of the repository', find: succeeds('git', ['rev-parse', '--git-dir'], { cwd: ROOT }) },
  DOCKER: { tool: 'Docker and Compose', programs: ['docker', 'docker-compose'], install: 'apt-get install docker.io docker-compose', find: succeeds('docker', ['version']) },
};

/** Every test file under `dir`, as paths relative to the repository. */
function testFiles(dir = 'test') {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const at = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(at);
    return entry.name.endsWith('.test.ts') ? [at] : [];
  });
}

/**
 * The test files that touch system tools, for the bare pass: those that wrap tests in a
 * `describeWith…` (test/architecture/system-tools.test.ts makes every file that reaches a
 * program do so) and those that run a bench script (the bench looks for wrk, pgbouncer and git
 * itself).
 */
export function filesTouchingTools() {
  return testFiles().filter((file) => /\bdescribeWith\w*\(|['"`]bench\/[\w-]+\.mjs['"`]/.test(fs.readFileSync(path.join(ROOT, file), 'utf8')));
}
