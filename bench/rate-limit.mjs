/**
 * What a request over its limit costs against one that is served (spec "Limits":
 * "cheap enough that rejecting is faster than serving").
 *
 * Starts the built app (dist/) twice on the same data: once with limits out of reach (every
 * request served) and once with limits of 1 (every request after the first refused with 429),
 * and drives the same requests at both from this process with keep-alive connections.
 * Embedded mode by default; set DATABASE_URL and REDIS_URL to measure on Postgres and Redis.
 *
 * Usage: npm run bench:rate-limit [-- --seconds 3 --connections 16]
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createApp } from '../dist/app.js';
import { loadConfig } from '../dist/config.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, connections: { type: 'string', default: '16' } } });
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-bench-'));
const prefix = `bench:${process.pid}:`;
const baseEnv = {
  NODE_ENV: 'test',
  DATA_DIR: dataDir,
  REDIS_KEY_PREFIX: prefix,
  ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
  ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
};

async function start(limit) {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  const config = loadConfig({ ...baseEnv, PORT: String(port), BASE_URL: `http://127.0.0.1:${port}`, RATE_LIMIT_PER_MINUTE: String(limit), TOKEN_RATE_LIMIT_PER_MINUTE: String(limit) });
  const app = await createApp(config, (error) => console.error('app error:', error));
  server.on('request', app.callback());
  return {
    port,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.close();
    },
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });

function send(port, { method, path: target, headers, body }) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Requests a second and mean latency (µs) over SECONDS, after a short warm-up; every status must be `expected`. */
async function measure(port, request, expected) {
  const run = async (ms) => {
    const deadline = Date.now() + ms;
    const latencies = [];
    const worker = async () => {
      while (Date.now() < deadline) {
        const started = process.hrtime.bigint();
        const status = await send(port, request);
        latencies.push(Number(process.hrtime.bigint() - started) / 1000);
        if (status !== expected) throw new Error(`${request.method} ${request.path}: expected ${expected}, got ${status}`);
      }
    };
    const began = process.hrtime.bigint();
    await Promise.all(Array.from({ length: CONNECTIONS }, worker));
    const elapsed = Number(process.hrtime.bigint() - began) / 1e9;
    return { perSecond: latencies.length / elapsed, meanUs: latencies.reduce((a, b) => a + b, 0) / latencies.length };
  };
  await run(500);
  return run(SECONDS * 1000);
}

async function main() {
  let app = await start(1_000_000);
  const registered = await fetch(`http://127.0.0.1:${app.port}/api/register.php`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Bench', redirect_uri: 'http://localhost:9999/callback' }),
  }).then((res) => res.json());
  const tokenBody = new URLSearchParams({ code: 'no-such-code', client_id: registered.client_id, client_secret: registered.client_secret }).toString();
  const cases = [
    ['POST /api/token.php (valid client, unknown code)', { method: 'POST', path: '/api/token.php', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(tokenBody) }, body: tokenBody }, 400],
    ['GET /api/userinfo.php (unknown token)', { method: 'GET', path: '/api/userinfo.php', headers: { authorization: 'Bearer no-such-token' } }, 401],
    ['GET /api/register.php (page)', { method: 'GET', path: '/api/register.php', headers: { accept: 'text/html' } }, 200],
  ];

  const served = [];
  for (const [, request, status] of cases) served.push(await measure(app.port, request, status));
  await app.close();

  app = await start(1);
  const rejected = [];
  for (const [, request] of cases) {
    await send(app.port, request); // spends the one allowed request
    rejected.push(await measure(app.port, request, 429));
  }
  await app.close();
  agent.destroy();

  const store = process.env.REDIS_URL ? 'Redis' : 'process memory';
  console.log(`Rate-limit cost: ${CONNECTIONS} keep-alive connections, ${SECONDS} s each, counters in ${store}, database ${process.env.DATABASE_URL ? 'Postgres' : 'embedded (PGlite)'}; load generator in the same process.\n`);
  const rows = cases.map(([name], i) => ({
    request: name,
    'served req/s': Math.round(served[i].perSecond),
    'served µs': Math.round(served[i].meanUs),
    '429 req/s': Math.round(rejected[i].perSecond),
    '429 µs': Math.round(rejected[i].meanUs),
    'rejecting is ×faster': Number((rejected[i].perSecond / served[i].perSecond).toFixed(1)),
  }));
  console.table(rows);

  if (process.env.REDIS_URL) {
    const redis = new Redis(process.env.REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(error);
  fs.rmSync(dataDir, { recursive: true, force: true });
  process.exit(1);
});
