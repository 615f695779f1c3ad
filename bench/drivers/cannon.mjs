/**
 * Load driver: autocannon in its own process, so the load it makes is not charged to the
 * server under test. Fixed connections for a fixed time; answers one JSON line:
 * { requests, wasted, served, perSecond, p50, p99, seconds, statuses, errors, exhausted }.
 *
 * A request may draw a fresh value (an authorization code, a refresh token) from a pool file
 * for each request; with `recycle`, the value the answer carries goes back to the pool (a
 * refresh token rotates: each chain stays one sequence of refreshes).
 *
 * Spec (argv[2], JSON): { url, connections, seconds, request: { method, path, headers, body },
 *   expect: [status…], pool?: { file, body: 'code={value}&…', recycle?: 'refresh_token', raw?: true } }
 * (`raw`: each value is already form-encoded, several fields at once: sent as it is.)
 */
import fs from 'node:fs';
import autocannon from 'autocannon';

const spec = JSON.parse(process.argv[2]);
const expected = new Set(spec.expect);
const latencies = [];
const statuses = {};
const request = { method: spec.request.method, path: spec.request.path, headers: spec.request.headers, body: spec.request.body };

let pool;
let exhaustedAt;
let tracker;
if (spec.pool) {
  pool = JSON.parse(fs.readFileSync(spec.pool.file, 'utf8'));
  let next = 0;
  const take = spec.pool.recycle ? () => pool.pop() : () => pool[next++];
  request.setupRequest = (req) => {
    let value = take();
    if (value === undefined) {
      // Out of fresh values: stop, and count only what came before (see `exhausted`).
      exhaustedAt ??= Date.now();
      tracker?.stop();
      value = 'pool-exhausted';
    }
    return { ...req, body: spec.pool.body.replace('{value}', spec.pool.raw ? value : encodeURIComponent(value)) };
  };
  if (spec.pool.recycle) {
    request.onResponse = (status, body) => {
      if (status === 200) pool.push(JSON.parse(body)[spec.pool.recycle]);
    };
  }
}

const startedAt = Date.now();
tracker = autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.seconds,
  sampleInt: 100,
  timeout: 30,
  requests: [request],
}, (error, result) => {
  if (error) {
    console.error(error);
    process.exit(1);
  }
  const seconds = exhaustedAt ? (exhaustedAt - startedAt) / 1000 : result.duration;
  latencies.sort((a, b) => a - b);
  const at = (q) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] : NaN);
  const served = latencies.length;
  console.log(JSON.stringify({
    requests: Object.values(statuses).reduce((a, b) => a + b, 0),
    wasted,
    served,
    perSecond: served / seconds,
    p50: at(0.5),
    p99: at(0.99),
    seconds,
    statuses,
    errors: result.errors,
    exhausted: Boolean(exhaustedAt),
  }));
});
let wasted = 0; // answers to requests sent after the pool ran out: they cost the server, but are no figure
tracker.on('response', (_client, status, _bytes, responseTime) => {
  if (exhaustedAt && Date.now() >= exhaustedAt) {
    wasted += 1;
    return;
  }
  statuses[status] = (statuses[status] ?? 0) + 1;
  if (expected.has(status)) latencies.push(responseTime);
});
