/**
 * Round-trip budgets: what one request may cost the stores, on PostgreSQL + Redis.
 * Counted by wrapping the drivers (helpers/round-trips.ts), one request at a time.
 *
 * | request                                  | budget            | held here (PostgreSQL, Redis)               |
 * |------------------------------------------|------------------|---------------------------------------------|
 * | code exchange                            | ≤ 3 PG, ≤ 2 Redis | 2 (client + code read, one write), 1       |
 * | userinfo                                 | ≤ 1 PG, ≤ 1 Redis | 1, 1                                       |
 * | rate limiting (all budgets of a request) | 1 Redis           | 1                                          |
 * | silent authorize (session + consent)     | ≤ 3 PG, ≤ 3 Redis | 2, 3                                       |
 * | refresh (no budget set)                  | –                 | 2, 1                                       |
 * | fresh login flow, 7 requests (none set)  | –                 | 15, 28: a look-up by index and a destroy    |
 * |                                          |                   | cost one Redis round trip each              |
 *
 * A client with webhook endpoints costs nothing more: the event's outbox messages are written
 * in the request's one write statement (store/statements.ts `WRITE`).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { createUser, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { countRoundTrips } from '../helpers/round-trips.js';
import type { RoundTripCounter, RoundTrips } from '../helpers/round-trips.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

/** Each figure is the largest of a few requests of the same kind (the first of each may warm a cache). */
const SAMPLES = 3;

describe('round trips per request (postgres + redis)', () => {
  let t: TestApp;
  let user: TestUser;
  let client: TestClient;
  let trips: RoundTripCounter;
  beforeAll(async () => {
    t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    user = await createUser(t);
    client = await registerClient(t);
    trips = countRoundTrips(t.server, [Number(new URL(t.env.REDIS_URL!).port || 6379)]);
  });
  afterAll(async () => { await t?.close(); });

  const rateLimitTrips = (counts: RoundTrips) => counts.log.filter((line) => line.startsWith('redis:') && line.includes(`${t.config.redisKeyPrefix}rl:`)).length;

  async function worst(label: string, sample: () => Promise<RoundTrips>) {
    const all: RoundTrips[] = [];
    for (let i = 0; i < SAMPLES; i += 1) all.push(await sample());
    const most = all.reduce((a, b) => (a.postgres + a.redis >= b.postgres + b.redis ? a : b));
    console.log(`${label}: ${most.postgres} PostgreSQL, ${most.redis} Redis round trips\n  ${most.log.join('\n  ')}`);
    return { ...most, rateLimit: Math.max(...all.map(rateLimitTrips)) };
  }

  async function freshCode(browser = new Browser(t.baseUrl)) {
    const redirect = await browser.authorize(client, user);
    return redirect.searchParams.get('code')!;
  }

  test('code exchange: 2 PostgreSQL round trips (one read, one write) and 1 Redis round trip, the rate limiting', async () => {
    const cost = await worst('code exchange', async () => {
      const code = await freshCode();
      return trips.during(async () => {
        const res = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
        expect(res.status).toBe(200);
      });
    });
    expect(cost.postgres).toBeLessThanOrEqual(2);
    expect(cost.redis).toBeLessThanOrEqual(1);
    expect(cost.rateLimit).toBe(1);
  });

  test('userinfo: at most 1 PostgreSQL and 1 Redis round trip', async () => {
    const code = await freshCode();
    const tokens = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    const bearer = `Bearer ${tokens.body.access_token}`;
    const cost = await worst('userinfo', () => trips.during(async () => {
      const res = await userinfo(t, bearer);
      expect(res.status).toBe(200);
    }));
    expect(cost.postgres).toBeLessThanOrEqual(1);
    expect(cost.redis).toBeLessThanOrEqual(1);
    expect(cost.rateLimit).toBe(1);
  });

  test('refresh (no budget set): one read, then the rotation and the new tokens in one conditional statement', async () => {
    const code = await freshCode();
    let refreshToken = (await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret })).body.refresh_token as string;
    const cost = await worst('refresh', () => trips.during(async () => {
      const res = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, client_secret: client.client_secret });
      expect(res.status).toBe(200);
      refreshToken = res.body.refresh_token as string;
    }));
    expect(cost.postgres).toBeLessThanOrEqual(2);
    expect(cost.redis).toBeLessThanOrEqual(1);
  });

  test('silent authorize (session and consent already there): 2 PostgreSQL and at most 3 Redis round trips', async () => {
    const browser = new Browser(t.baseUrl);
    await freshCode(browser);
    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' });
    const cost = await worst('silent authorize', () => trips.during(async () => {
      const step = await browser.request(`/api/authorize.php?${query}`);
      expect(step.location).toMatch(/^http:\/\/localhost:9999\/callback\?code=/);
    }));
    expect(cost.postgres).toBeLessThanOrEqual(2);
    expect(cost.redis).toBeLessThanOrEqual(3);
    expect(cost.rateLimit).toBe(1);
  });

  test('fresh login flow (no budget set): 28 Redis round trips over its 7 requests, one for each look-up of a session by uid and each destroy', async () => {
    const cost = await worst('fresh login flow', () => trips.during(() => new Browser(t.baseUrl).authorize(client, user)));
    // The provider's own writes, ours, and a rate limit a request; never an index read apart
    // from what it names (GET then HGETALL) or an instance read again to destroy it (HGET).
    expect(cost.log.filter((line) => /^redis: .*(\$3 get \$|\$4 hget \$)/.test(line))).toEqual([]);
    expect(cost.redis).toBeLessThanOrEqual(28);
    expect(cost.postgres).toBeLessThanOrEqual(15);
  });

  describe('for a client with webhook endpoints (each event is written to the outbox in the same request)', () => {
    let subscribed: TestClient;
    beforeAll(async () => {
      subscribed = await registerClient(t);
      // Nothing listens there: deliveries fail later, in the worker, which is not counted.
      await t.app.webhookEndpoints.add(subscribed.client_id, { url: 'http://127.0.0.1:9/hook', events: ['authorization.granted', 'token.issued'] });
    });
    const deliveries = (eventType: string) => t.app.db.prisma.webhookDelivery.count({ where: { eventType, endpoint: { clientId: subscribed.client_id } } });

    test('silent authorize: still 2 PostgreSQL round trips, the outbox message written with the code', async () => {
      const browser = new Browser(t.baseUrl);
      await browser.authorize(subscribed, user);
      const query = new URLSearchParams({ client_id: subscribed.client_id, redirect_uri: subscribed.redirect_uri, response_type: 'code' });
      const before = await deliveries('authorization.granted');
      const cost = await worst('silent authorize, client with webhooks', () => trips.during(async () => {
        const step = await browser.request(`/api/authorize.php?${query}`);
        expect(step.location).toMatch(/^http:\/\/localhost:9999\/callback\?code=/);
      }));
      expect(await deliveries('authorization.granted')).toBe(before + SAMPLES);
      expect(cost.postgres).toBeLessThanOrEqual(2);
      expect(cost.redis).toBeLessThanOrEqual(3);
    });

    test('code exchange: still 2 PostgreSQL round trips, the outbox message written with the tokens', async () => {
      const before = await deliveries('token.issued');
      const cost = await worst('code exchange, client with webhooks', async () => {
        const redirect = await new Browser(t.baseUrl).authorize(subscribed, user);
        const code = redirect.searchParams.get('code')!;
        return trips.during(async () => {
          const res = await tokenRequest(t, { code, client_id: subscribed.client_id, client_secret: subscribed.client_secret });
          expect(res.status).toBe(200);
        });
      });
      expect(await deliveries('token.issued')).toBe(before + SAMPLES);
      expect(cost.postgres).toBeLessThanOrEqual(2);
      expect(cost.redis).toBeLessThanOrEqual(1);
    });
  });
});

describe('a refusal held until its window ends (postgres + redis)', () => {
  let t: TestApp;
  let client: TestClient;
  beforeAll(async () => {
    t = await startTestApp({ env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1' } });
    client = await registerClient(t);
  });
  afterAll(async () => { await t?.close(); });

  test('asks no store: 0 PostgreSQL and 0 Redis round trips, and the 429 all the same', async () => {
    const trips = countRoundTrips(t.server, [Number(new URL(t.env.REDIS_URL!).port || 6379)]);
    const form = { code: 'not-a-code', client_id: client.client_id, client_secret: client.client_secret };
    expect((await tokenRequest(t, form)).status).toBe(400); // the budget's one request
    expect((await tokenRequest(t, form)).status).toBe(429); // refused by the store, and held from now on
    const cost = await trips.during(async () => {
      const res = await tokenRequest(t, form);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    });
    expect(cost).toMatchObject({ postgres: 0, redis: 0 });
  });
});
