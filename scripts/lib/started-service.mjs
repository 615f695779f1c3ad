/**
 * The built service as operators run it, for the fuzz and soak scripts: `node dist/launch.cjs` in
 * its own process, on the machine's PostgreSQL (a fresh database `oauth_test_…`) and Redis (a
 * fresh key prefix `test:…`), removed again by `stop()`. With `embedded: true`, PGlite and
 * in-process stores in a temporary DATA_DIR instead.
 *
 * @example const service = await startService({ env: { RATE_LIMIT_PER_MINUTE: '1000000' } }); …; await service.stop();
 */
import { spawn, execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Limits out of reach: the scripts send far more than 60 requests a minute from one address. */
export const UNLIMITED = { RATE_LIMIT_PER_MINUTE: '1000000', TOKEN_RATE_LIMIT_PER_MINUTE: '1000000' };

async function admin(sql) {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `npm run build` (tsc into dist/). */
export async function build() {
  await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: ROOT });
}

/** Resident set size of a process in bytes (Linux /proc), or undefined once it is gone. */
export function rssOf(pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** `users` are created (dist/cli.js user:create) before the service starts: an embedded database has one owner at a time. */
export async function startService({ env = {}, embedded = false, users = [] } = {}) {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-script-'));
  const baseUrl = `http://127.0.0.1:${port}`;
  const serviceEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'test', PORT: String(port), BASE_URL: baseUrl, DATA_DIR: dataDir, ...UNLIMITED };
  let database;
  let prefix;
  if (!embedded) {
    database = `oauth_test_script_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin(`CREATE DATABASE "${database}"`);
    const url = new URL(ADMIN_URL);
    url.pathname = `/${database}`;
    prefix = `test:script:${process.pid}:${randomBytes(4).toString('hex')}:`;
    Object.assign(serviceEnv, { DATABASE_URL: url.toString(), REDIS_URL, REDIS_KEY_PREFIX: prefix });
  }
  Object.assign(serviceEnv, env);

  for (const user of users) {
    await promisify(execFile)(process.execPath, ['dist/cli.js', 'user:create', '--username', user.username, '--password', user.password,
      '--email', user.email ?? 'soak@example.com', '--full-name', user.fullName ?? 'Soak User'], { cwd: ROOT, env: serviceEnv });
  }
  const child = spawn(process.execPath, ['dist/launch.cjs'], { cwd: ROOT, env: serviceEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk) => {
    output += chunk.toString('utf8');
    if (output.length > 1_000_000) output = output.slice(-500_000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`service did not start:\n${output}`)), 60_000);
      const check = () => { if (output.includes('OAuth service at')) { clearTimeout(timer); resolve(); } };
      child.stdout.on('data', check);
      void exited.then((code) => { clearTimeout(timer); reject(new Error(`service exited (${code}):\n${output}`)); });
    });
  } catch (error) {
    child.kill('SIGKILL');
    if (database) await admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }

  const redis = prefix ? new Redis(REDIS_URL, { lazyConnect: true }) : undefined;
  const pool = database ? new pg.Pool({ connectionString: serviceEnv.DATABASE_URL, max: 1 }) : undefined;

  return {
    baseUrl,
    port,
    pid: child.pid,
    env: serviceEnv,
    /** Everything the service printed so far (its last 0.5–1 MB). */
    output: () => output,
    exited,
    rss: () => rssOf(child.pid),
    /** Registers a client through POST /api/register.php (JSON). */
    async registerClient(redirectUri = 'http://localhost:9999/callback') {
      const res = await fetch(`${baseUrl}/api/register.php`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Script client', redirect_uri: redirectUri }),
      });
      if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`);
      return res.json();
    },
    /** Rows of `oidc_models` by type (Postgres only). */
    async modelRows() {
      if (!pool) return undefined;
      const { rows } = await pool.query('SELECT type, count(*)::int AS n FROM oidc_models GROUP BY type ORDER BY type');
      return Object.fromEntries(rows.map((row) => [row.type, row.n]));
    },
    /** Redis keys under the service's prefix (SCAN, so the shared Redis is not blocked). */
    async redisKeys() {
      if (!redis) return undefined;
      if (redis.status === 'wait') await redis.connect();
      let cursor = '0';
      let count = 0;
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        count += keys.length;
        cursor = next;
      } while (cursor !== '0');
      return count;
    },
    /** SIGTERM (drained shutdown), then removes the database, the Redis keys and DATA_DIR. */
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(timer);
      await pool?.end();
      if (redis) {
        if (redis.status === 'wait') await redis.connect();
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          if (keys.length) await redis.del(...keys);
          cursor = next;
        } while (cursor !== '0');
        redis.disconnect();
      }
      if (database) await admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      fs.rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}
