/**
 * The processes a benchmark run starts: servers under test (each its own Node process, its
 * output in a log file so that writing it costs the bench nothing), the load drivers, and what
 * /proc says about a server's CPU time and memory.
 *
 * @example const server = await startServer('svc', [ 'dist/launch.cjs' ], env, `${base}/healthz/live`);
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TICKS_PER_SECOND = 100; // USER_HZ on Linux: /proc/<pid>/stat counts CPU time in these

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Node CPU time (user + system, µs) and resident memory (bytes) of a process, read from /proc. */
export function processUsage(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // proc(5) fields from the 3rd (state) on
  const ticks = Number(fields[11]) + Number(fields[12]); // utime (field 14) + stime (field 15)
  const rssPages = Number(fields[21]); // rss (field 24), in pages
  return { cpuUs: (ticks * 1e6) / TICKS_PER_SECOND, rssBytes: rssPages * 4096 };
}

/**
 * Starts `node <args>` in `cwd` (this checkout unless told) with exactly `env` (plus PATH), its
 * stdout and stderr in a log file, and waits until `readyUrl` answers 200.
 * Returns { pid, startedAt, log, stop(), usage() }.
 */
export async function startServer(name, args, env, readyUrl, { logDir = os.tmpdir(), timeoutMs = 90_000, cwd = ROOT } = {}) {
  const log = path.join(logDir, `${name}.log`);
  const out = fs.openSync(log, 'w');
  const startedAt = Date.now();
  const child = spawn(process.execPath, args, { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  let gone;
  void exited.then((code) => { gone = code; });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gone !== undefined) throw new Error(`${name} exited (${gone}) before it was ready; its log ${log}:\n${tail(log)}`);
    try {
      const res = await fetch(readyUrl);
      if (res.status === 200) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} not ready after ${timeoutMs} ms; its log ${log}:\n${tail(log)}`);
    }
    await sleep(100);
  }
  return {
    name,
    pid: child.pid,
    /** When the process was spawned (ms since the epoch): a `--cpu-prof` profile's clock starts about then. */
    startedAt,
    log,
    usage: () => processUsage(child.pid),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The last lines of a log file, for error messages. */
export function tail(file, lines = 30) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** The load generator the bench drives with unless told: Debian's `wrk` when installed (C, light on the shared cores), else autocannon. */
export function defaultLoad() {
  return spawnSync('wrk', ['-v'], { stdio: 'ignore' }).error ? 'autocannon' : 'wrk';
}

/** Runs a bench driver (`bench/drivers/<name>.mjs`) in its own process with a JSON spec (and `env` added to the bench's); resolves with its JSON answer. */
export function runDriver(name, spec, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bench', 'drivers', `${name}.mjs`), JSON.stringify(spec)], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr += chunk; });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`driver ${name} failed (${code}): ${stderr.slice(-2000)}`));
      try {
        resolve(JSON.parse(stdout.trim().split('\n').at(-1)));
      } catch {
        reject(new Error(`driver ${name} printed no result: ${stdout.slice(-500)} ${stderr.slice(-1000)}`));
      }
    });
  });
}
