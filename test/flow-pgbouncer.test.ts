/**
 * The service behind a private PgBouncer in transaction mode, as it ships
 * (docs/production-data-tier.md): DATABASE_URL is the pooler, DATABASE_DIRECT_URL the server
 * (migrations), DATABASE_POOLER=pgbouncer, and the role's bounds set by the documented command.
 * The flow suite's core runs through it, several flows at once: registration, authorize → login
 * → consent → token → userinfo → refresh → introspect → revoke, and the webhooks they raise.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { READY_CACHE_MS } from '../src/http/health.js';
import { isStoreFailure } from '../src/store/store-failure.js';
import { Browser } from './helpers/browser.js';
import { basicAuth, createUser, postForm, registerClient, tokenRequest, userinfo } from './helpers/fixtures.js';
import { boundRole, startPgbouncer } from './helpers/pgbouncer.js';
import type { Pgbouncer } from './helpers/pgbouncer.js';
import { startReceiver, verify, webhooksApi } from './helpers/receiver.js';
import type { Receiver } from './helpers/receiver.js';
import { describeWith, PGBOUNCER } from './helpers/system-tool.js';
import { startTestApp } from './helpers/test-app.js';
import type { TestApp } from './helpers/test-app.js';

const FLOWS = 8;
const EVENTS = ['authorization.granted', 'token.issued', 'token.refreshed', 'token.revoked'];

describeWith(PGBOUNCER)('the service through PgBouncer (transaction mode)', () => {
  let bouncer: Pgbouncer;
  let receiver: Receiver;
  let t: TestApp;
  const logged: unknown[] = [];

  beforeAll(async () => {
    [bouncer, receiver] = await Promise.all([startPgbouncer(), startReceiver()]);
    t = await startTestApp({
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '200' },
      log: (error) => logged.push(error),
      beforeStart: async (env) => {
        await boundRole(env.DATABASE_URL!);
        Object.assign(env, { DATABASE_DIRECT_URL: env.DATABASE_URL, DATABASE_URL: bouncer.urlFor(env.DATABASE_URL!), DATABASE_POOLER: 'pgbouncer' });
      },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await bouncer?.stop();
  });

  /** One client's whole life, with its webhooks checked at the end. */
  async function flow(n: number) {
    const client = await registerClient(t, 'http://localhost:9999/callback', `App ${n}`);
    const user = await createUser(t);
    const path = `/flow-${n}`;
    const subscription = await webhooksApi(t.baseUrl, client, { json: { url: receiver.url(path), events: EVENTS } });
    expect(subscription.status).toBe(201);

    const redirect = await new Browser(t.baseUrl).authorize(client, user, { state: `s${n}` });
    expect(redirect.searchParams.get('state')).toBe(`s${n}`);
    const issued = await tokenRequest(t, { code: redirect.searchParams.get('code')!, client_id: client.client_id, client_secret: client.client_secret });
    expect(issued.status).toBe(200);
    expect((await userinfo(t, `Bearer ${issued.body.access_token}`)).body).toMatchObject({ username: user.username });

    const refreshed = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: String(issued.body.refresh_token), client_id: client.client_id, client_secret: client.client_secret });
    expect(refreshed.status).toBe(200);
    const active = await postForm(t, '/api/introspect.php', { token: String(refreshed.body.access_token) }, { authorization: basicAuth(client) });
    expect(active.body).toMatchObject({ active: true, client_id: client.client_id, username: user.username });

    expect((await postForm(t, '/api/revoke.php', { token: String(refreshed.body.refresh_token) }, { authorization: basicAuth(client) })).status).toBe(200);
    expect((await postForm(t, '/api/introspect.php', { token: String(refreshed.body.access_token) }, { authorization: basicAuth(client) })).body).toEqual({ active: false });
    expect((await userinfo(t, `Bearer ${refreshed.body.access_token}`)).status).toBe(401);

    for (const type of EVENTS) {
      const hit = await receiver.next((h) => h.path === path && h.event.type === type, 10_000);
      expect(verify(hit, String(subscription.body.secret))).toEqual(hit.event);
      expect(hit.event.data).toMatchObject({ client_id: client.client_id });
    }
  }

  test(`the flow's core, ${FLOWS} at once, twice: every step answers as on PostgreSQL itself`, async () => {
    await Promise.all(Array.from({ length: FLOWS }, (_, n) => flow(n)));
    await Promise.all(Array.from({ length: FLOWS }, (_, n) => flow(FLOWS + n)));
    const ready = await fetch(`${t.baseUrl}/healthz/ready`);
    expect(ready.status).toBe(200);
    expect(logged).toEqual([]);
  }, 120_000);

  test('PgBouncer gone: requests get 503 temporarily_unavailable, and readiness names the pooler', async () => {
    await bouncer.stop();
    const token = await tokenRequest(t, { grant_type: 'authorization_code', code: 'x', client_id: 'nobody', client_secret: 'x' });
    expect(token.status).toBe(503);
    expect(token.body.error).toBe('temporarily_unavailable');
    expect(Number(token.headers.get('retry-after'))).toBeGreaterThan(0);
    // Readiness answers from a check at most READY_CACHE_MS old: the next one sees the pooler gone.
    let ready = await fetch(`${t.baseUrl}/healthz/ready`);
    for (const until = Date.now() + READY_CACHE_MS + 5000; ready.status === 200 && Date.now() < until;) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      ready = await fetch(`${t.baseUrl}/healthz/ready`);
    }
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'unavailable', failing: ['database'], details: { database: 'pgbouncer (DATABASE_URL) refuses connections' } });
    // What was logged meanwhile (the webhook worker's polls) is the store's failure, nothing else.
    expect(logged.filter((error) => !isStoreFailure(error))).toEqual([]);
  }, 30_000);
});
