/**
 * How long an event takes from the request that raises it to a receiver's door
 * (delivered at once, within a second end to end when the receiver is up).
 *
 * Starts the built app (dist/) and a local receiver, subscribes an endpoint, then sends
 * test events one after another through `POST /api/webhooks.php?id=…&action=test` (the same
 * outbox, worker and signed POST as every other event) and prints the latency distribution
 * from sending the request to the receiver getting the POST.
 * Embedded mode by default; set DATABASE_URL (and REDIS_URL) to measure on Postgres.
 *
 * Usage: npm run bench:webhook-latency [-- --events 100]
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../dist/app.js';
import { loadConfig } from '../dist/config.js';

const { values } = parseArgs({ options: { events: { type: 'string', default: '100' } } });
const EVENTS = Number(values.events);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-bench-'));

/** A receiver that answers 204 and resolves the waiter of each arrival. */
async function startReceiver() {
  let arrived = () => {};
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(204).end();
      arrived(process.hrtime.bigint());
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    next: () => new Promise((resolve) => { arrived = resolve; }),
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

async function main() {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  const config = loadConfig({
    NODE_ENV: 'test', DATA_DIR: dataDir, PORT: String(server.address().port), BASE_URL: base,
    REDIS_KEY_PREFIX: `bench:${process.pid}:`, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    RATE_LIMIT_PER_MINUTE: '1000000', TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
  });
  const app = await createApp(config, (error) => console.error('app error:', error));
  server.on('request', app.callback());
  const receiver = await startReceiver();

  const client = await fetch(`${base}/api/register.php`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Bench', redirect_uri: 'http://localhost:9999/callback' }),
  }).then((res) => res.json());
  const authorization = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
  const endpoint = await fetch(`${base}/api/webhooks.php`, {
    method: 'POST', headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url, events: ['token.issued'] }),
  }).then((res) => res.json());

  const latenciesMs = [];
  for (let i = 0; i < EVENTS; i += 1) {
    const arrival = receiver.next();
    const started = process.hrtime.bigint();
    const res = await fetch(`${base}/api/webhooks.php?id=${endpoint.id}&action=test`, { method: 'POST', headers: { authorization } });
    if (res.status !== 202) throw new Error(`test event: expected 202, got ${res.status}`);
    latenciesMs.push(Number((await arrival) - started) / 1e6);
  }

  await receiver.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await app.close();
  fs.rmSync(dataDir, { recursive: true, force: true });

  latenciesMs.sort((a, b) => a - b);
  const at = (q) => latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(q * latenciesMs.length))].toFixed(1);
  console.log(`Webhook latency, request → receiver: ${EVENTS} events one at a time, database ${process.env.DATABASE_URL ? 'Postgres' : 'embedded (PGlite)'}.\n`);
  console.table([{ 'p50 ms': at(0.5), 'p95 ms': at(0.95), 'p99 ms': at(0.99), 'max ms': latenciesMs.at(-1).toFixed(1), 'under 1 s': `${latenciesMs.filter((ms) => ms < 1000).length}/${EVENTS}` }]);
}

main().catch((error) => {
  console.error(error);
  fs.rmSync(dataDir, { recursive: true, force: true });
  process.exit(1);
});
