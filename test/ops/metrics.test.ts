/**
 * Prometheus metrics: `/metrics` on METRICS_PORT only, in the text exposition format, with
 * counters that move when flows run. Every scrape is parsed by the reference parser, the
 * Prometheus project's Python client (test/helpers/prometheus-text.ts), and the values asserted
 * are the ones it read; those tests skip without it (outside CI).
 */
import net from 'node:net';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser, obtainCode } from '../helpers/browser.js';
import { createUser, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { describeWithParser, parsePrometheusText, sampleValue } from '../helpers/prometheus-text.js';
import type { Family } from '../helpers/prometheus-text.js';
import { startReceiver, webhooksApi } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

/** Ports that TCP servers of this process listen on (the app's listener and any metrics listener). */
const listeningPorts = (): number[] => (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles()
  .filter((handle): handle is net.Server => handle instanceof net.Server && handle.listening)
  .map((server) => (server.address() as AddressInfo).port);
/** The ports opened while `t` started. */
const openedBy = async (start: () => Promise<TestApp>) => {
  const before = new Set(listeningPorts());
  const t = await start();
  return { t, opened: listeningPorts().filter((port) => !before.has(port)).sort() };
};

/** `t`'s metrics, as the reference parser reads them. */
async function scrapeOf(t: TestApp): Promise<Map<string, Family>> {
  const res = await fetch(`http://127.0.0.1:${t.app.metricsPort}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

/** `t`'s metrics once a webhook delivery attempt with `outcome` is counted (it is, just after the receiver answers), or after 2.5 s. */
async function scrapeOnceDelivered(t: TestApp, outcome: string): Promise<Map<string, Family>> {
  let families = await scrapeOf(t);
  for (let i = 0; i < 50 && !sampleValue(families, 'oauth_webhook_deliveries_total', { outcome }); i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    families = await scrapeOf(t);
  }
  return families;
}

describeWithParser('GET /metrics on METRICS_PORT', () => {
  let t: TestApp;
  let receiver: Receiver;
  const scrape = () => scrapeOf(t);
  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_PORT: '0', TOKEN_RATE_LIMIT_PER_MINUTE: '3', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  test('counters move with a flow: requests, tokens by grant type, logins, refusals, deliveries', async () => {
    const before = await scrape();
    expect(sampleValue(before, 'oauth_tokens_issued_total', { grant_type: 'authorization_code' }) ?? 0).toBe(0);
    expect(sampleValue(before, 'oauth_redis_connected')).toBe(1);
    expect(sampleValue(before, 'oauth_postgres_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(0);
    expect(sampleValue(before, 'process_cpu_user_seconds_total')).toBeGreaterThan(0); // Node defaults

    const user = await createUser(t);
    const client = await registerClient(t);
    const hook = await webhooksApi(t.baseUrl, client, { json: { url: receiver.url('/m'), events: ['token.issued'] } });
    expect(hook.status).toBe(201);
    await new Browser(t.baseUrl).authorize(client, { ...user, password: 'wrong password' }).catch(() => undefined);
    const code = await obtainCode(t.baseUrl, client, user);
    const token = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    expect(token.status).toBe(200);
    const refreshed = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: String(token.body.refresh_token), client_id: client.client_id, client_secret: client.client_secret });
    expect(refreshed.status).toBe(200);
    let refused = 0;
    for (let i = 0; i < 3; i += 1) if ((await tokenRequest(t, { code: 'x', client_id: client.client_id, client_secret: client.client_secret })).status === 429) refused += 1;
    expect(refused).toBeGreaterThan(0);
    await receiver.next((hit) => hit.path === '/m', 5000);
    const after = await scrapeOnceDelivered(t, 'delivered');

    expect(sampleValue(after, 'oauth_tokens_issued_total', { grant_type: 'authorization_code' })).toBe(1);
    expect(sampleValue(after, 'oauth_tokens_issued_total', { grant_type: 'refresh_token' })).toBe(1);
    expect(sampleValue(after, 'oauth_logins_total', { outcome: 'failure' })).toBe(1);
    expect(sampleValue(after, 'oauth_logins_total', { outcome: 'success' })).toBe(1);
    expect(sampleValue(after, 'oauth_rate_limit_refusals_total', { budget: 'token-address' })).toBe(refused);
    expect(sampleValue(after, 'oauth_webhook_deliveries_total', { outcome: 'delivered' })).toBe(1);
    expect(sampleValue(after, 'oauth_webhook_outbox_pending')).toBe(0);
    expect(sampleValue(after, 'oauth_webhook_outbox_oldest_pending_age_seconds')).toBe(0);
    expect(sampleValue(after, 'oauth_http_request_duration_seconds_count', { method: 'POST', route: '/api/token.php', status: '200' })).toBe(2);
    expect(sampleValue(after, 'oauth_http_request_duration_seconds_count', { method: 'POST', route: '/api/token.php', status: '429' })).toBe(refused);
    expect(sampleValue(after, 'oauth_http_request_duration_seconds_count', { method: 'POST', route: '/interaction/:uid/login' })).toBeGreaterThanOrEqual(1);
    const routes = new Set(after.get('oauth_http_request_duration_seconds')!.samples.map((s) => s.labels.route));
    for (const route of routes) expect(route).not.toMatch(/\?|\/interaction\/[\w-]{10,}/);
  });

  test('the main port does not serve /metrics; the metrics port serves nothing else', async () => {
    const main = await fetch(`${t.baseUrl}/metrics`);
    expect(main.status).toBe(404);
    expect(await main.text()).not.toContain('oauth_http_request_duration_seconds');
    expect((await fetch(`http://127.0.0.1:${t.app.metricsPort}/api/token.php`)).status).toBe(404);
  });
});

describeWithParser('GET /metrics: a blocked login, and a delivery waiting for its retry', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_PORT: '0', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    receiver = await startReceiver();
    receiver.respond = () => 503; // the endpoint is down: each delivery stays pending for its retry
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });
  const scrape = () => scrapeOf(t);

  test('logins counted blocked once the guard holds the username and address', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const browser = new Browser(t.baseUrl);
    let page = await browser.follow(`/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`);
    // As fast as they go until one is refused unchecked (the 9th must wait 15 s: accounts/login-guard.ts).
    let attempts = 0;
    while (attempts < 9 && !/id="error"[^>]*>Too many/.test(page.body)) {
      attempts += 1;
      page = await browser.submit(page, '/login', { username: user.username, password: `wrong ${attempts}` });
    }
    expect(page.status).toBe(429);
    const after = await scrape();
    expect(sampleValue(after, 'oauth_logins_total', { outcome: 'failure' })).toBe(attempts - 1);
    expect(sampleValue(after, 'oauth_logins_total', { outcome: 'blocked' })).toBe(1);
    expect(sampleValue(after, 'oauth_logins_total', { outcome: 'success' }) ?? 0).toBe(0);
  });

  test('the outbox gauges show the pending delivery and its age', async () => {
    expect(sampleValue(await scrape(), 'oauth_webhook_outbox_pending')).toBe(0);
    const user = await createUser(t);
    const client = await registerClient(t);
    expect((await webhooksApi(t.baseUrl, client, { json: { url: receiver.url('/down'), events: ['token.issued'] } })).status).toBe(201);
    const code = await obtainCode(t.baseUrl, client, user);
    expect((await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret })).status).toBe(200);
    await receiver.next((hit) => hit.path === '/down', 5000);
    let after = await scrapeOnceDelivered(t, 'pending');
    expect(sampleValue(after, 'oauth_webhook_deliveries_total', { outcome: 'pending' })).toBe(1);
    expect(sampleValue(after, 'oauth_webhook_deliveries_total', { outcome: 'delivered' }) ?? 0).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    after = await scrape();
    expect(sampleValue(after, 'oauth_webhook_outbox_pending')).toBe(1);
    expect(sampleValue(after, 'oauth_webhook_outbox_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(1);
  });
});

describe('oauth_tokens_issued_total counts a token response only once its writes committed', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ env: { METRICS_PORT: '0' } }); });
  afterAll(async () => { await t?.close(); });

  /** The counter's value for authorization_code, read from the app's registry. */
  const issued = async () => {
    const metric = await t.app.metrics.registry!.getSingleMetric('oauth_tokens_issued_total')!.get();
    return metric.values.find((v) => v.labels.grant_type === 'authorization_code')?.value ?? 0;
  };

  test('5 redemptions of one code racing: one 200, and the counter moves by 1 (RFC 6749 §4.1.2)', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    for (let round = 0; round < 3; round += 1) {
      const code = await obtainCode(t.baseUrl, client, user);
      const before = await issued();
      const answers = await Promise.all(Array.from({ length: 5 }, () => tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400, 400, 400]);
      expect(await issued()).toBe(before + 1);
    }
  });
});

// The listeners an app opens are the same in both modes (the stores are clients): on PostgreSQL,
// which starts faster than PGlite.
describe('without METRICS_PORT', () => {
  test('no metrics listener is opened, and nothing is counted', async () => {
    const { t, opened } = await openedBy(() => startTestApp());
    try {
      expect(t.config.metricsPort).toBeUndefined();
      expect(t.app.metricsPort).toBeUndefined();
      expect(opened).toEqual([t.config.port]); // the app's own port only
      expect(t.app.metrics.registry).toBeUndefined(); // prom-client is not even loaded
    } finally {
      await t.close();
    }
  });

  test('with it, one more listener', async () => {
    const { t, opened } = await openedBy(() => startTestApp({ env: { METRICS_PORT: '0' } }));
    try {
      expect(opened).toEqual([t.config.port, t.app.metricsPort!].sort());
    } finally {
      await t.close();
    }
  });
});

describe('METRICS_HOST: where the metrics listener listens', () => {
  /** An address of this machine that is not loopback, if it has one. */
  const external = Object.values(os.networkInterfaces()).flat().find((a) => a && !a.internal && a.family === 'IPv4')?.address;
  const reach = (host: string, port: number) => fetch(`http://${host}:${port}/metrics`).then((res) => res.status, (error: Error) => (error.cause as { code?: string } | undefined)?.code ?? error.message);

  test('by default loopback only: /metrics names clients and has no authentication, so no other machine reaches it', async () => {
    const t = await startTestApp({ env: { METRICS_PORT: '0' } });
    try {
      expect(t.config.metricsHost).toBe('127.0.0.1');
      expect(await reach('127.0.0.1', t.app.metricsPort!)).toBe(200);
      if (external) expect(await reach(external, t.app.metricsPort!)).toBe('ECONNREFUSED');
    } finally {
      await t.close();
    }
  });

  test('METRICS_HOST=0.0.0.0 opens it to a scraper on another machine', async () => {
    const t = await startTestApp({ env: { METRICS_PORT: '0', METRICS_HOST: '0.0.0.0' } });
    try {
      expect(await reach(external ?? '127.0.0.1', t.app.metricsPort!)).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describeWithParser('the parser: the reference parser, and checks of what it lets through', () => {
  test('the values are the reference parser\'s: a counter family is named without _total, its sample with it', async () => {
    const families = await parsePrometheusText('# HELP a_total As.\n# TYPE a_total counter\na_total{x="y\\"z"} 3\n# TYPE g gauge\ng NaN\n');
    expect([...families.keys()]).toEqual(['a', 'g']);
    expect(families.get('a')).toEqual({ name: 'a', type: 'counter', help: 'As.', samples: [{ name: 'a_total', labels: { x: 'y"z' }, value: 3 }] });
    expect(sampleValue(families, 'g')).toBeNaN();
  });

  test.each([
    ['no final newline', '# TYPE a counter\na 1'],
    ['a sample before its TYPE', 'a 1\n'],
    ['a bad value', '# TYPE a gauge\na one\n'],
    ['a bad label', '# TYPE a gauge\na{b=1} 1\n'],
    ['a split family', '# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x="y"} 2\n'],
    ['non-cumulative buckets', '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'],
    ['a TYPE given twice', '# TYPE a gauge\n# TYPE a gauge\na 1\n'],
  ])('rejects %s', async (_, text) => {
    await expect(parsePrometheusText(text)).rejects.toThrow();
  });

  test('a line it cannot read is refused by the reference parser itself', async () => {
    await expect(parsePrometheusText('# TYPE a gauge\na one\n')).rejects.toThrow(/the Prometheus parser refused the text: ValueError/);
  });
});
