/**
 * Fuzz: tens of thousands of malformed
 * requests across every path against the built service in its own process, on PostgreSQL and
 * Redis (a fresh database and key prefix, removed at the end; --embedded for PGlite).
 *
 * Cases come from test/helpers/fuzz-cases.mjs (seeded: `--seed` names a run exactly), sent over
 * raw sockets so any bytes reach the server: broken percent-encoding and UTF-8, NUL bytes,
 * repeated and huge parameters and headers, wrong content types and encodings, odd
 * Authorization values (Basic headers broken every way) and cookies, deeply nested and
 * `__proto__` JSON, RFC 7591 bodies of every wrong shape, `resource` parameters, every form's
 * `_csrf` (near misses of a real token: as many characters but more bytes, one off, expired),
 * Client ID Metadata Documents of every wrong shape served over local https (with Debian's
 * openssl; without it that part is skipped, saying so), malformed HTTP; then slow partial
 * requests, which the server must close within its timeouts.
 *
 * Reports the status histogram, every 5xx, hang or internal in a body (stack frames, error
 * names, file paths, SQL, Prisma, "oops"), anything the service logged as unexpected, and its
 * RSS before and after. Exits 1 on any problem.
 *
 * Usage: npm run fuzz [-- --count 20000 --seed 1 --concurrency 8 --embedded]
 */
import { spawnSync } from 'node:child_process';
import https from 'node:https';
import { parseArgs } from 'node:util';
import { makeCertificates } from '../test/helpers/certificates.mjs';
import { csrfContext, generateCases, problemsOf, sendCase, sendSlowCase, slowCases, wrongDocuments } from '../test/helpers/fuzz-cases.mjs';
import { build, startService } from './lib/started-service.mjs';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '20000' },
    seed: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '8' },
    embedded: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
  },
});
const COUNT = Number(values.count);
const SEED = Number(values.seed);
// Short server timeouts so the slow cases end quickly; the defaults are tested the same way.
const TIMEOUTS = { HTTP_HEADERS_TIMEOUT_MS: '2000', HTTP_REQUEST_TIMEOUT_MS: '5000', HTTP_KEEP_ALIVE_TIMEOUT_MS: '2000' };

const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** Metadata documents of every wrong shape, on local https with a throwaway CA the service trusts as operators make it. */
async function startDocuments() {
  if (spawnSync('openssl', ['version']).status !== 0) {
    console.log('no openssl (apt-get install openssl): metadata documents are not fuzzed this run');
    return undefined;
  }
  const tls = makeCertificates('openssl');
  let routes = {};
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const route = routes[new URL(req.url ?? '/', 'https://127.0.0.1').pathname];
    const answer = () => {
      if (!route) return res.writeHead(404).end();
      const body = Buffer.isBuffer(route.body) || typeof route.body === 'string' ? route.body : JSON.stringify(route.body);
      res.writeHead(route.status ?? 200, { 'content-type': 'application/json', ...route.headers }).end(body);
    };
    if (route?.delayMs) setTimeout(answer, route.delayMs).unref();
    else answer();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `https://127.0.0.1:${server.address().port}`;
  routes = wrongDocuments(origin);
  return {
    urls: Object.keys(routes).map((path) => `${origin}${path}`),
    env: { NODE_EXTRA_CA_CERTS: tls.caFile, CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS: 'true', CLIENT_METADATA_TIMEOUT_MS: '1500', CLIENT_METADATA_CACHE_MIN_SECONDS: '0' },
    close: () => { server.closeAllConnections(); server.close(); tls.remove(); },
  };
}

if (!values['no-build']) await build();
const documents = await startDocuments();
const service = await startService({ embedded: values.embedded, env: { ...TIMEOUTS, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', ...documents?.env } });
let exitCode = 0;
try {
  // Context, so cases reach past "unknown client": a client, a pending login, a webhook.
  const client = await service.registerClient();
  const authorize = await fetch(`${service.baseUrl}/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`, { redirect: 'manual' });
  const uid = /\/interaction\/([^/?#]+)/.exec(authorize.headers.get('location') ?? '')?.[1];
  const cookie = authorize.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ');
  const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
  const hook = await fetch(`${service.baseUrl}/api/webhooks.php`, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/json' }, body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['token.issued'] }) });
  const webhookId = hook.status === 201 ? (await hook.json()).id : undefined;
  // Every form's _csrf is fuzzed from a browser that holds a token (fuzz-cases.mjs csrfCase).
  const context = { client, interaction: uid ? { uid, cookie } : undefined, webhookId, documents: documents?.urls, csrf: await csrfContext(service.baseUrl) };
  console.log(`fuzz: ${COUNT} cases, seed ${SEED}, ${values.concurrency} connections at a time, against ${values.embedded ? 'embedded PGlite' : 'PostgreSQL + Redis'} (pid ${service.pid})`);
  console.log(`context: client ${client.client_id}, interaction ${uid ?? 'none'}, webhook ${webhookId ?? 'none'}, metadata documents ${documents?.urls.length ?? 'none'}`);

  const rssBefore = service.rss();
  const statuses = new Map();
  const problems = [];
  let sent = 0;
  let loggedSoFar = 0;
  let slowest = { ms: 0 };
  const began = performance.now();
  const cases = generateCases({ seed: SEED, count: COUNT, context });
  const worker = async () => {
    for (let next = cases.next(); !next.done; next = cases.next()) {
      const c = next.value;
      const response = await sendCase(service.baseUrl, c);
      sent += 1;
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.ms > slowest.ms) slowest = { ms: response.ms, name: c.name };
      const found = problemsOf(c, response, service.baseUrl);
      // A logged unexpected error names the cases in flight when it appeared (exact at --concurrency 1).
      const logged = (service.output().match(/ failed:|"level":50/g) ?? []).length;
      if (logged > loggedSoFar) { loggedSoFar = logged; found.push('the service logged an unexpected error'); }
      if (found.length) problems.push({ name: c.name, target: c.target?.slice(0, 200), headers: c.headers?.map(([n, v]) => `${n}: ${v.slice(0, 60)}`).join(' | '), problems: found, status: response.status, body: response.body.slice(0, 300) });
      if (sent % 2000 === 0) console.log(`  ${sent} sent, ${problems.length} problems, RSS ${mb(service.rss())}`);
    }
  };
  await Promise.all(Array.from({ length: Number(values.concurrency) }, worker));
  const seconds = (performance.now() - began) / 1000;

  // Slow partial requests, all at once: each must be closed by the server, not by us.
  const slow = await Promise.all(slowCases().map(async (c) => ({ c, result: await sendSlowCase(service.baseUrl, c, { giveUpMs: 60_000 }) })));
  for (const { c, result } of slow) {
    if (!result.closedByServer) problems.push({ name: `slow: ${c.name}`, problems: ['connection left open 60 s'] });
    if (result.status >= 500) problems.push({ name: `slow: ${c.name}`, problems: [`status ${result.status}`] });
  }

  const live = await fetch(`${service.baseUrl}/healthz/live`).then((res) => res.status, () => 0);
  if (live !== 200) problems.push({ name: 'after the fuzz', problems: [`/healthz/live answered ${live}`] });
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const rssAfter = service.rss();
  const unexpected = service.output().split('\n').filter((line) => / failed:|app error|Unhandled|uncaught|"level":50/i.test(line));

  const fiveXX = [...statuses].filter(([status]) => status >= 500).reduce((a, [, n]) => a + n, 0);
  console.log(`\n${sent} requests in ${seconds.toFixed(0)} s (${(sent / seconds).toFixed(0)}/s); slowest ${slowest.ms.toFixed(0)} ms (${slowest.name})`);
  console.log(`statuses: ${[...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s || 'closed'}×${n}`).join(' ')}`);
  console.log(`5xx: ${fiveXX}; hangs: ${problems.filter((p) => p.problems.some((x) => x.includes('hang'))).length}; bodies with internals: ${problems.filter((p) => p.problems.some((x) => x.includes('leaks'))).length}`);
  console.log(`slow partial requests: ${slow.map(({ c, result }) => `${c.name} → ${result.status || 'closed'} after ${(result.ms / 1000).toFixed(1)} s`).join('; ')}`);
  console.log(`RSS before ${mb(rssBefore)}, after ${mb(rssAfter)} (${(((rssAfter - rssBefore) / rssBefore) * 100).toFixed(1)} %)`);
  console.log(`unexpected errors logged by the service: ${unexpected.length}`);
  for (const line of unexpected.slice(0, 10)) console.log(`  ${line.slice(0, 300)}`);
  for (const p of problems.slice(0, 30)) console.log(`PROBLEM ${p.name}: ${p.problems.join(', ')}\n  target: ${p.target ?? ''}\n  headers: ${p.headers ?? ''}\n  status ${p.status}, body: ${p.body ?? ''}`);
  if (problems.length || unexpected.length) {
    exitCode = 1;
    console.log(`\nfuzz FAILED: ${problems.length} problems`);
    if (unexpected.length) console.log(service.output().split('\n').filter((l) => l.trim()).slice(-60).join('\n'));
  } else {
    console.log('\nfuzz PASSED: no 5xx, no hang, no internals');
  }
} catch (error) {
  console.error(error);
  console.error(service.output().slice(-5000));
  exitCode = 2;
} finally {
  await service.stop();
  documents?.close();
}
process.exit(exitCode);
