/**
 * `npm run request-path`: which files of src/ one request runs. Starts the built service
 * (dist/) in this process on PostgreSQL + Redis (a fresh database and key prefix) or embedded,
 * walks a login to get codes, then records V8's precise coverage (function call counts) around
 * each of three code exchanges: a file counts when one of its functions ran during every one of
 * them (a timer of the webhook worker or the cleanup job that happens to fire during one
 * exchange is not the exchange's). Prints the files, one a line, as src/ paths; `--json` prints
 * `{files}`.
 *
 * Usage: npm run build && node scripts/request-path.mjs [--mode pg|embedded] [--json]
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import inspector from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Browser } from '../bench/lib/browser.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');
const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const USER = { username: 'walker', password: 'correct horse battery', email: 'walker@example.com', fullName: 'Path Walker' };

const { values: options } = parseArgs({ options: { mode: { type: 'string', default: 'pg' }, json: { type: 'boolean', default: false } } });
if (!['pg', 'embedded'].includes(options.mode)) {
  process.stderr.write('request-path: --mode must be pg or embedded\n');
  process.exit(2);
}

async function admin(sql) {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The src/ file a dist/ module was built from. */
const sourceOf = (url) => path.relative(DIST, fileURLToPath(url)).replace(/\.js$/, '.ts').replace(/\.cjs$/, '.cts');

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-request-path-'));
  const database = `oauth_reqpath_${process.pid}_${randomBytes(4).toString('hex')}`;
  const prefix = `reqpath:${process.pid}:${randomBytes(4).toString('hex')}:`;
  const env = { NODE_ENV: 'test', PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '1000000', TOKEN_RATE_LIMIT_PER_MINUTE: '1000000' };
  if (options.mode === 'pg') {
    await admin(`CREATE DATABASE "${database}"`);
    const url = new URL(POSTGRES_ADMIN_URL);
    url.pathname = `/${database}`;
    Object.assign(env, { DATABASE_URL: url.toString(), REDIS_URL, REDIS_KEY_PREFIX: prefix });
  }
  const http = await import('node:http');
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://localhost:${server.address().port}`;
  env.BASE_URL = base;

  const { loadConfig } = await import(pathToFileURL(path.join(DIST, 'config.js')).href);
  const { createApp } = await import(pathToFileURL(path.join(DIST, 'app.js')).href);
  const { createLogger } = await import(pathToFileURL(path.join(DIST, 'ops', 'logger.js')).href);
  const app = await createApp(loadConfig(env), createLogger({ level: 'silent' }));
  server.on('request', app.callback());
  const session = new inspector.Session();
  session.connect();
  try {
    await app.users.create(USER);
    const client = await (await fetch(`${base}/api/register.php`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Path', redirect_uri: 'http://localhost:9999/callback' }),
    })).json();
    const exchange = async (code) => {
      const res = await fetch(`${base}/api/token.php`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ code, client_id: client.client_id, client_secret: client.client_secret }),
      });
      if (res.status !== 200) throw new Error(`exchange answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    };
    const browser = new Browser(base);
    const codes = [];
    for (let i = 0; i < 4; i += 1) codes.push(await browser.authorize(client, USER));
    await exchange(codes.shift()); // warm: every module on the path loaded and compiled

    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    let touched;
    for (const code of codes) {
      await session.post('Profiler.takePreciseCoverage'); // resets the counts
      await exchange(code);
      const { result } = await session.post('Profiler.takePreciseCoverage');
      const files = new Set(result
        .filter((script) => script.url.startsWith(pathToFileURL(DIST).href))
        .filter((script) => script.functions.some((fn) => fn.ranges[0].count > 0))
        .map((script) => sourceOf(script.url)));
      touched = touched ? new Set([...touched].filter((file) => files.has(file))) : files;
    }
    await session.post('Profiler.stopPreciseCoverage');
    const files = [...touched].filter((file) => !file.startsWith('generated/')).sort().map((file) => `src/${file}`);
    process.stdout.write(options.json ? `${JSON.stringify({ files })}\n` : `${files.join('\n')}\n`);
  } finally {
    session.disconnect();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await app.close({ timeoutMs: 1000 });
    if (options.mode === 'pg') {
      await admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
