/**
 * Redis through Sentinel (REDIS_SENTINELS, REDIS_SENTINEL_NAME; docs/production-data-tier.md),
 * on a private primary, replica and three Sentinels. Flows run while the primary is killed
 * (SIGKILL); once the Sentinels promote the replica, every path serves again within 10 s without
 * a restart, a login session made before the kill still works, and no answer in between is a
 * 5xx other than 503 `temporarily_unavailable` with Retry-After (nor a hang). Meanwhile the
 * rate limits hold (in memory). A name no Sentinel knows, or no Sentinel at all, stops start-up.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { ConfigError } from '../../src/config.js';
import { connectRedis } from '../../src/store/redis.js';
import { isStoreFailure } from '../../src/store/store-failure.js';
import { Browser } from '../helpers/browser.js';
import type { TestClient } from '../helpers/browser.js';
import { createUser, tokenRequest } from '../helpers/fixtures.js';
import { startSentinelSet } from '../helpers/redis-sentinel.js';
import type { SentinelSet } from '../helpers/redis-sentinel.js';
import { freePort } from '../helpers/services.js';
import { describeWith, REDIS_SENTINEL } from '../helpers/system-tool.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const LIMIT = 20;
const WORKERS = 4;

/** An answer the service gave the test: its status and, for a 5xx or an error redirect, the error code. */
interface Answer { at: number; path: string; status: number; error?: string; retryAfter?: string | null }

describeWith(REDIS_SENTINEL)('Redis through Sentinel', () => {
  let set: SentinelSet;
  let t: TestApp;
  const logged: unknown[] = [];
  const answers: Answer[] = [];
  const unanswered: string[] = [];
  const realFetch = globalThis.fetch;
  let addresses = 0;
  /** A client address no budget has counted yet (TRUST_PROXY: the service reads X-Forwarded-For; IPv6 counts by /64). */
  const freshAddress = () => `2001:db8:${(addresses += 1).toString(16)}::1`;

  beforeAll(async () => {
    set = await startSentinelSet();
    t = await startTestApp({
      env: { ...set.env, TRUST_PROXY: 'true', RATE_LIMIT_PER_MINUTE: String(LIMIT), TOKEN_RATE_LIMIT_PER_MINUTE: String(LIMIT) },
      log: (error) => logged.push(error),
    });
    // Every request to the service is recorded, bounded at 10 s (a hang is a failure too).
    globalThis.fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.origin !== t.baseUrl) return realFetch(input, init);
      const res = await realFetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(10_000) })
        .catch((error: Error) => { unanswered.push(`${url.pathname}: ${error.message}`); throw error; });
      const answer: Answer = { at: Date.now(), path: url.pathname, status: res.status };
      if (res.status >= 500) Object.assign(answer, { error: /temporarily_unavailable/.exec(await res.clone().text())?.[0], retryAfter: res.headers.get('retry-after') });
      // At the authorization endpoint a store failure is redirected to the client (RFC 6749 §4.1.2.1).
      if (/[?&]error=temporarily_unavailable\b/.test(res.headers.get('location') ?? '')) answer.error = 'temporarily_unavailable';
      answers.push(answer);
      return res;
    };
  }, 90_000);
  afterAll(async () => {
    globalThis.fetch = realFetch;
    await t?.close();
    await set?.stop();
  });

  const register = async (headers: Record<string, string>): Promise<TestClient> => {
    const res = await fetch(`${t.baseUrl}/api/register.php`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ client_name: 'Sentinel', redirect_uri: 'http://localhost:9999/callback' }) });
    if (res.status !== 201) throw new Error(`registration: ${res.status}`);
    return res.json() as Promise<TestClient>;
  };
  const userinfo = (token: string, headers: Record<string, string>) => fetch(`${t.baseUrl}/api/userinfo.php`, { headers: { authorization: `Bearer ${token}`, ...headers } });

  test('a name no Sentinel monitors, or no Sentinel at all, stops start-up naming the variable', async () => {
    const sentinels = set.sentinelPorts.map((port) => ({ host: '127.0.0.1', port }));
    const unknown = await connectRedis({ sentinels, name: 'nobody', password: undefined, serverPassword: undefined }).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(ConfigError);
    expect((unknown as ConfigError).variable).toBe('REDIS_SENTINEL_NAME');
    expect((unknown as Error).message).toContain('"nobody"');
    const nowhere = await connectRedis({ sentinels: [{ host: '127.0.0.1', port: await freePort() }], name: set.name, password: undefined, serverPassword: undefined }).catch((error: unknown) => error);
    expect((nowhere as Error).message).toMatch(/^cannot reach any Sentinel of REDIS_SENTINELS \(127\.0\.0\.1:\d+\): .*ECONNREFUSED/);
  });

  test('the primary killed: 503s (never another 5xx, never a hang) and limits held while Sentinel fails over; then every path serves within 10 s, the old session too', async () => {
    const user = await createUser(t);
    // A login session and a consent from before the kill.
    const sessionProxy = { origin: t.baseUrl, headers: { 'x-forwarded-for': freshAddress() } };
    const session = new Browser(t.baseUrl, sessionProxy);
    const firstClient = await register({ 'x-forwarded-for': freshAddress() });
    expect((await session.authorize(firstClient, user)).searchParams.get('code')).toBeTruthy();
    await set.replicated();

    // Flows, each from addresses of its own, until told to stop; a flow that meets a 503 starts over.
    let running = true;
    const completed: number[] = [];
    const worker = async () => {
      while (running) {
        const headers = { 'x-forwarded-for': freshAddress() };
        try {
          const client = await register(headers);
          const code = (await new Browser(t.baseUrl, { origin: t.baseUrl, headers }).authorize(client, user)).searchParams.get('code');
          if (!code) continue;
          const issued = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret }, headers);
          if (issued.status !== 200 || (await userinfo(String(issued.body.access_token), headers)).status !== 200) continue;
          const refreshed = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: String(issued.body.refresh_token), client_id: client.client_id, client_secret: client.client_secret }, headers);
          if (refreshed.status === 200) completed.push(Date.now());
        } catch {
          // a 503 page mid-flow (the Browser throws on it): recorded by the fetch wrapper; start over
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const workers = Array.from({ length: WORKERS }, worker);
    try {
      for (const started = Date.now(); completed.length < WORKERS && Date.now() - started < 60_000;) await new Promise((resolve) => setTimeout(resolve, 50));

      const completedBefore = completed.length;
      // The window held open while the test probes it, however slow the machine.
      await set.holdFailover();
      await set.primary.kill();
      while (t.app.redis!.status === 'ready') await new Promise((resolve) => setTimeout(resolve, 10));
      // The window: limits hold in memory, readiness says what Sentinel sees.
      const probe = freshAddress();
      const hit = () => fetch(`${t.baseUrl}/nothing-here`, { headers: { 'x-forwarded-for': probe, accept: 'application/json' } });
      for (let i = 0; i < LIMIT; i += 1) expect((await hit()).status).toBe(404);
      const refused = await hit();
      expect(refused.status).toBe(429);
      const ready = await fetch(`${t.baseUrl}/healthz/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ status: 'unavailable', failing: ['redis'], details: { redis: expect.stringMatching(/^sentinel: 3 of 3 Sentinels answer; primary "oauth-primary" is (down|up)/) } });
      expect(t.app.redis!.status).not.toBe('ready'); // the probe ran inside the window

      await set.releaseFailover();
      await set.promoted();
      const promotedAt = Date.now();

      // Every path again, each until it serves: the old session authorizes silently (no login page).
      const pending = new Map<string, () => Promise<boolean>>([
        ['old session', async () => {
          sessionProxy.headers['x-forwarded-for'] = freshAddress();
          const redirect = await session.authorize(firstClient, undefined).catch(() => undefined);
          const code = redirect?.searchParams.get('code');
          if (!code) return false;
          const issued = await tokenRequest(t, { code, client_id: firstClient.client_id, client_secret: firstClient.client_secret }, { 'x-forwarded-for': freshAddress() });
          return issued.status === 200 && (await userinfo(String(issued.body.access_token), { 'x-forwarded-for': freshAddress() })).status === 200;
        }],
        ['a new flow', async () => completed.some((at) => at > promotedAt)],
        ['readiness', async () => (await fetch(`${t.baseUrl}/healthz/ready`)).status === 200],
        ['limits counted in Redis again', async () => t.app.redis!.status === 'ready'],
      ]);
      while (pending.size > 0 && Date.now() - promotedAt < 10_000) {
        for (const [path, serves] of pending) if (await serves()) pending.delete(path);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const servedAfterMs = Date.now() - promotedAt;
      running = false;
      await Promise.all(workers);

      expect([...pending.keys()]).toEqual([]);
      expect(servedAfterMs).toBeLessThan(10_000);
      expect(unanswered).toEqual([]);
      const failures = answers.filter((answer) => answer.status >= 500 && !answer.path.startsWith('/healthz')); // readiness's 503 is its answer
      expect(failures.filter((answer) => answer.status !== 503 || answer.error !== 'temporarily_unavailable' || !(Number(answer.retryAfter) > 0))).toEqual([]);
      expect(answers.filter((answer) => answer.error === 'temporarily_unavailable').length).toBeGreaterThan(0); // the flows did meet the failover
      expect(completedBefore).toBeGreaterThanOrEqual(WORKERS);
      expect(logged.filter((error) => !isStoreFailure(error))).toEqual([]);
    } finally {
      running = false;
    }
  }, 150_000);

  test('a primary that hangs (SIGSTOP) and is failed over: the client leaves it for the promoted replica by itself, on Sentinel\'s word', async () => {
    const hung = await startSentinelSet({ name: 'oauth-hung' });
    const redis = await connectRedis({ sentinels: hung.sentinelPorts.map((port) => ({ host: '127.0.0.1', port })), name: hung.name, password: undefined, serverPassword: undefined }, { redisCommandMs: 300, redisConnectMs: 1000 });
    try {
      await redis.set('before', '1');
      await hung.replicated();
      hung.primary.pause(); // its connections stay open: nothing closes the client's
      await hung.promoted();
      const promotedAt = Date.now();
      let served = false;
      while (!served && Date.now() - promotedAt < 10_000) {
        served = await redis.set('after', '1').then(() => true, () => false);
        if (!served) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(served).toBe(true);
      expect(redis.stream.remotePort).toBe(hung.replica.port);
      expect(await redis.get('before')).toBe('1');
    } finally {
      redis.disconnect();
      hung.primary.resume();
      await hung.stop();
    }
  }, 90_000);
});
