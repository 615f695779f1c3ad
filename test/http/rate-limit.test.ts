/**
 * Spec "Limits" with the default settings: 5 token requests a minute, 60 requests a minute to
 * everything else, 429 with Retry-After and the RateLimit-* headers. Keys: the token endpoint
 * per address and per client_id, everything else per address. In both modes: counters in
 * Redis (postgres mode) and in process memory (embedded mode).
 *
 * The app trusts a proxy (TRUST_PROXY=true), so each test speaks from its own addresses
 * through X-Forwarded-For; one test starts an app without it.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { Browser } from '../helpers/browser.js';
import type { TestClient } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { REDIS_URL } from '../helpers/services.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

/** Empty values are unset for src/config.ts: the app runs on its own defaults (60 and 5). */
const DEFAULT_LIMITS = { RATE_LIMIT_PER_MINUTE: '', TOKEN_RATE_LIMIT_PER_MINUTE: '' };

interface Answer { status: number; headers: Headers; body: string }

async function hit(t: TestApp, path: string, init: { address?: string; form?: Record<string, string>; headers?: Record<string, string>; accept?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = { accept: init.accept ?? 'application/json', ...init.headers };
  if (init.address) headers['x-forwarded-for'] = init.address;
  if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
  const res = await fetch(`${t.baseUrl}${path}`, {
    method: init.form ? 'POST' : 'GET',
    headers,
    body: init.form && new URLSearchParams(init.form).toString(),
    redirect: 'manual',
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

const token = (t: TestApp, client: TestClient, address: string, code = 'not-a-code') =>
  hit(t, '/api/token.php', { address, form: { code, client_id: client.client_id, client_secret: client.client_secret } });

function expectLimitHeaders(res: Answer, limit: number, remaining: number) {
  expect(res.headers.get('ratelimit-limit')).toBe(String(limit));
  expect(res.headers.get('ratelimit-remaining')).toBe(String(remaining));
  const reset = Number(res.headers.get('ratelimit-reset'));
  expect(Number.isInteger(reset)).toBe(true);
  expect(reset).toBeGreaterThanOrEqual(0);
  expect(reset).toBeLessThanOrEqual(60);
}

function expectTooManyRequests(res: Answer, limit: number) {
  expect(res.status).toBe(429);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  expect(body.error).toBe('too_many_requests');
  expect(typeof body.error_description).toBe('string');
  const retryAfter = res.headers.get('retry-after')!;
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  expectLimitHeaders(res, limit, 0);
  expect(res.headers.get('ratelimit-reset')).toBe(retryAfter);
}

let next = 0;
/** A fresh documentation address (RFC 5737) for each use. */
const address = () => { next += 1; return `198.51.${100 + Math.floor(next / 250)}.${next % 250 + 1}`; };

describe.each(['postgres', 'embedded'] as const)('default limits (%s mode)', (mode) => {
  let t: TestApp;
  let clients: (TestClient & { client_name: string })[];

  beforeAll(async () => {
    t = await startTestApp({ mode, env: { ...DEFAULT_LIMITS, TRUST_PROXY: 'true' } });
    clients = [];
    for (let i = 0; i < 9; i += 1) clients.push(await registerClient(t));
  }, 60_000);
  afterAll(async () => { await t?.close(); });

  test('the configuration is the spec\'s: 5 and 60', () => {
    expect(t.config.tokenRateLimitPerMinute).toBe(5);
    expect(t.config.rateLimitPerMinute).toBe(60);
  });

  test('the 6th token request in a minute gets 429 with Retry-After and the headers; failed ones counted', async () => {
    const from = address();
    for (let i = 1; i <= 5; i += 1) {
      const res = await token(t, clients[0]!, from);
      expect(res.status).toBe(400); // invalid_code: a failed request, counted all the same
      expectLimitHeaders(res, 5, 5 - i);
    }
    expectTooManyRequests(await token(t, clients[0]!, from), 5);
  });

  test('a token form over the body limit is counted with its headers, and refused with 429 once the address is spent', async () => {
    const from = address();
    const huge = { code: 'x'.repeat(64 * 1024), client_id: clients[0]!.client_id, client_secret: 'x' };
    for (let i = 1; i <= 5; i += 1) {
      const res = await hit(t, '/api/token.php', { address: from, form: huge });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toEqual({ error: 'invalid_request', error_description: 'request body is too large' });
      expectLimitHeaders(res, 5, 5 - i);
    }
    // The first refusal of this address: nothing is held yet, so the form is read and refused after.
    expectTooManyRequests(await hit(t, '/api/token.php', { address: from, form: huge }), 5);
  });

  test('the 61st request to other endpoints gets 429: one budget across them all, pages and 404s included', async () => {
    const from = address();
    const paths = ['/api/register.php', '/api/userinfo.php', '/nothing-here', '/.well-known/openid-configuration'];
    for (let i = 1; i <= 60; i += 1) {
      const res = await hit(t, paths[i % paths.length]!, { address: from });
      expect(res.status).not.toBe(429);
      expectLimitHeaders(res, 60, 60 - i);
    }
    expectTooManyRequests(await hit(t, '/api/userinfo.php', { address: from }), 60);
    // A browser page is refused the same way: no rendering for a request over its limit.
    expectTooManyRequests(await hit(t, '/api/register.php', { address: from, accept: 'text/html' }), 60);
  });

  test('the two budgets are separate', async () => {
    const spentOnTokens = address();
    for (let i = 0; i < 6; i += 1) await token(t, clients[1]!, spentOnTokens);
    const page = await hit(t, '/api/register.php', { address: spentOnTokens });
    expect(page.status).toBe(200);
    expectLimitHeaders(page, 60, 59);

    const spentOnPages = address();
    for (let i = 0; i < 61; i += 1) await hit(t, '/nothing-here', { address: spentOnPages });
    const res = await token(t, clients[2]!, spentOnPages);
    expect(res.status).toBe(400);
    expectLimitHeaders(res, 5, 4);
  });

  test('health checks and the stylesheet are exempt and carry no limit headers', async () => {
    const from = address();
    for (let i = 0; i < 70; i += 1) {
      const res = await hit(t, i % 2 ? '/healthz' : '/assets/site.css', { address: from });
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBeNull();
    }
    expectLimitHeaders(await hit(t, '/nothing-here', { address: from }), 60, 59);
  });

  test('one address\'s spent budget leaves other addresses theirs', async () => {
    const abuser = address();
    for (let i = 0; i < 6; i += 1) await token(t, clients[3]!, abuser);
    expectTooManyRequests(await token(t, clients[3]!, abuser), 5);
    // Another client from the same address: the address budget is spent.
    expectTooManyRequests(await token(t, clients[4]!, abuser), 5);
    // The 5 requests that passed the address check also spent clients[3]'s own budget.
    expectTooManyRequests(await token(t, clients[3]!, address()), 5);
    // Another client from another address is untouched (refusals at the address spent nothing of it).
    const res = await token(t, clients[4]!, address());
    expect(res.status).toBe(400);
    expectLimitHeaders(res, 5, 4);
  });

  test('one client\'s spent budget (from many addresses, body or Basic) leaves other clients theirs', async () => {
    const victim = clients[5]!;
    for (let i = 0; i < 4; i += 1) expect((await token(t, victim, address())).status).toBe(400);
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(victim.client_id)}:${encodeURIComponent(victim.client_secret)}`).toString('base64')}`;
    const viaBasic = await hit(t, '/api/token.php', { address: address(), form: { code: 'not-a-code' }, headers: { authorization: basic } });
    expect(viaBasic.status).toBe(400);
    // Fresh address (4 left) but a spent client (0 left): the client's budget is reported.
    const refused = await token(t, victim, address());
    expectTooManyRequests(refused, 5);

    const other = await token(t, clients[6]!, address());
    expect(other.status).toBe(400);
    expectLimitHeaders(other, 5, 4);
  });

  test('where two budgets apply, the headers report the one closer to exhaustion', async () => {
    const busy = address();
    const client = clients[7]!;
    for (let i = 0; i < 3; i += 1) await token(t, client, busy); // busy: 2 left, client: 2 left
    // Fresh address (4 left), client with 1 left after this: the client's budget.
    expectLimitHeaders(await token(t, client, address()), 5, 1);
    // Busy address (1 left after this), a fresh client (4 left): the address's budget.
    expectLimitHeaders(await token(t, clients[8]!, busy), 5, 1);
  });

  test('a refused token request does no work: the code it carried still redeems elsewhere', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const code = await new Browser(t.baseUrl, { origin: t.baseUrl, headers: { 'x-forwarded-for': address() } })
      .authorize(client, user).then((url) => url.searchParams.get('code')!);
    const spent = address();
    for (let i = 0; i < 5; i += 1) await hit(t, '/api/token.php', { address: spent, form: { code: 'x', client_id: `unknown${i}`, client_secret: 'x' } });
    expectTooManyRequests(await token(t, client, spent, code), 5);
    const redeemed = await token(t, client, address(), code);
    expect(redeemed.status).toBe(200);
    expect(JSON.parse(redeemed.body).access_token).toEqual(expect.any(String));
  });

  test('a refused address stays refused until its window ends, its requests spend no client budget', async () => {
    const client = await registerClient(t);
    const spent = address();
    for (let i = 0; i < 5; i += 1) await hit(t, '/api/token.php', { address: spent, form: { code: 'x', client_id: `unknown${i}`, client_secret: 'x' } });
    for (let i = 0; i < 3; i += 1) expectTooManyRequests(await token(t, client, spent), 5);
    expectTooManyRequests(await hit(t, '/api/token.php', { address: spent, form: { grant_type: 'refresh_token' } }), 5);
    // The refused requests named the client: its budget is whole (4 left after this request).
    expectLimitHeaders(await token(t, client, address()), 5, 4);
  });

  test('an IPv6 client is one key per /64: rotating within it does not escape', async () => {
    for (let i = 1; i <= 60; i += 1) await hit(t, '/nothing-here', { address: `2001:db8:1:2::${i.toString(16)}` });
    expectTooManyRequests(await hit(t, '/nothing-here', { address: '2001:db8:1:2:ffff::1' }), 60);
    expect((await hit(t, '/nothing-here', { address: '2001:db8:1:3::1' })).status).toBe(404);
  });

  test('behind the proxy, entries a client writes before the proxy\'s own do not escape', async () => {
    const real = address();
    for (let i = 1; i <= 60; i += 1) await hit(t, '/nothing-here', { address: `10.0.0.${i}, ${real}` });
    expectTooManyRequests(await hit(t, '/nothing-here', { address: `10.9.9.9, ${real}` }), 60);
  });

  if (mode === 'postgres') {
    test('counters live in Redis under this run\'s key prefix', async () => {
      const from = address();
      await hit(t, '/nothing-here', { address: from });
      const redis = new Redis(REDIS_URL);
      try {
        const prefix = t.config.redisKeyPrefix;
        expect(prefix).toMatch(/^test:/);
        expect(await redis.get(`${prefix}rl:address:${from}`)).toBe('1');
        expect(await redis.pttl(`${prefix}rl:address:${from}`)).toBeGreaterThan(50_000);
      } finally {
        redis.disconnect();
      }
    });
  }
});

describe('without TRUST_PROXY', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '5', TOKEN_RATE_LIMIT_PER_MINUTE: '2' } }); });
  afterAll(async () => { await t?.close(); });

  test('rotating X-Forwarded-For does not escape the limit: the socket address is the key', async () => {
    for (let i = 1; i <= 5; i += 1) {
      const res = await hit(t, '/nothing-here', { address: `203.0.113.${i}` });
      expectLimitHeaders(res, 5, 5 - i);
    }
    expectTooManyRequests(await hit(t, '/nothing-here', { address: '203.0.113.99' }), 5);
    expectTooManyRequests(await hit(t, '/nothing-here'), 5);
  });

  test('limits follow the configuration (TOKEN_RATE_LIMIT_PER_MINUTE=2)', async () => {
    for (let i = 1; i <= 2; i += 1) {
      const res = await hit(t, '/api/token.php', { address: `203.0.113.${i}`, form: { code: 'x', client_id: 'someone', client_secret: 'x' } });
      expect(res.status).toBe(401);
      expectLimitHeaders(res, 2, 2 - i);
    }
    expectTooManyRequests(await hit(t, '/api/token.php', { form: { code: 'x', client_id: 'someone', client_secret: 'x' } }), 2);
  });
});
