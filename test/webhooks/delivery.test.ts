/**
 * Delivery: events reach a real local receiver at once, signed (Standard Webhooks), and are
 * retried with backoff when the receiver fails; redirects are not followed; 410 disables the
 * endpoint; a hanging receiver times out; the outbox survives a restart.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser, obtainCode } from '../helpers/browser.js';
import { createUser, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { startReceiver, verify, webhooksApi } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const ALLOW_LOCAL = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '100' };

async function subscribe(t: TestApp, client: { client_id: string; client_secret: string }, url: string, events: string[]) {
  const res = await webhooksApi(t.baseUrl, client, { json: { url, events } });
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string };
}

async function deliveriesOf(t: TestApp, client: { client_id: string; client_secret: string }, id: string) {
  const res = await webhooksApi(t.baseUrl, client, { query: { id, action: 'deliveries' } });
  expect(res.status).toBe(200);
  return res.body.deliveries as Record<string, unknown>[];
}

/** Polls `check` until it returns a value (not undefined), for up to `timeoutMs`. */
async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('delivery (postgres)', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestApp({ mode: 'postgres', env: ALLOW_LOCAL });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });
  afterEach(() => { receiver.respond = () => 200; });

  test('token.issued reaches the receiver after the code exchange, and its signature verifies', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const hook = await subscribe(t, client, receiver.url('/issued'), ['token.issued']);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);

    const code = await obtainCode(t.baseUrl, client, user);
    const exchangedAt = Date.now();
    const token = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    expect(token.status).toBe(200);

    // Delivered on the worker's wake-up (its latency is measured by `npm run bench:webhook-latency`).
    const hit = await receiver.next((h) => h.path === '/issued', 5000);
    expect(hit.receivedAt).toBeGreaterThanOrEqual(exchangedAt);
    expect(hit.method).toBe('POST');
    expect(hit.headers['content-type']).toBe('application/json');
    expect(hit.headers['webhook-id']).toMatch(/^msg_/);
    expect(hit.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(verify(hit, hook.secret)).toEqual(hit.event);
    expect(() => verify(hit, 'whsec_' + Buffer.alloc(32, 1).toString('base64'))).toThrow();
    expect(Object.keys(hit.event)).toEqual(['id', 'type', 'created_at', 'data']);
    expect(hit.event).toMatchObject({
      id: expect.stringMatching(/^evt_/),
      type: 'token.issued',
      data: { client_id: client.client_id, client_name: 'Test App', username: user.username, grant_type: 'authorization_code', scope: 'openid', grant_id: expect.any(String) },
    });
    expect(hit.body).not.toContain(String(token.body.access_token));
    expect(hit.body).not.toContain(code);
    expect(hit.body).not.toContain(client.client_secret);
  });

  test('every event this service raises in the flow, with its payload; none carries a secret, token or code', async () => {
    const user = await createUser(t);
    const client = await registerClient(t, 'http://localhost:9999/callback', 'Every Event App');
    const hook = await subscribe(t, client, receiver.url('/all'), ['authorization.granted', 'authorization.denied', 'token.issued', 'token.refreshed', 'token.revoked', 'client.updated', 'client.secret_rotated']);
    const of = (type: string) => receiver.next((h) => h.path === '/all' && h.event.type === type);
    const base = { client_id: client.client_id, client_name: 'Every Event App' };

    const code = await obtainCode(t.baseUrl, client, user);
    const token = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    expect(token.status).toBe(200);
    const granted = await of('authorization.granted');
    expect(granted.event.data).toEqual({ ...base, username: user.username, scope: 'openid' });
    const issued = await of('token.issued');
    expect(issued.event.data).toEqual({ ...base, username: user.username, grant_type: 'authorization_code', scope: 'openid', grant_id: expect.any(String) });

    // A code used twice revokes what it issued (RFC 6749 §4.1.2): token.revoked, reason code_replay.
    const replay = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    expect(replay.body.error).toBe('invalid_code');
    const revoked = await of('token.revoked');
    expect(revoked.event.data).toEqual({ ...base, grant_id: issued.event.data.grant_id, token_type: 'grant', reason: 'code_replay' });

    const denied = await new Browser(t.baseUrl).authorize(client, user, {}, 'deny');
    expect(denied.searchParams.get('error')).toBe('access_denied');
    // A refusal names no one: any client may send signed-in visitors here and learn nothing of those who say no.
    const refusal = await of('authorization.denied');
    expect(refusal.event.data).toEqual(base);
    const stored = await t.app.users.findByUsername(user.username);
    for (const identity of [user.username, stored!.id]) expect(refusal.body).not.toContain(identity);

    for (const hit of receiver.hits.filter((h) => h.path === '/all')) {
      expect(verify(hit, hook.secret)).toBeTruthy();
      for (const secret of [client.client_secret, code, String(token.body.access_token), String(token.body.id_token), user.password]) {
        expect(hit.body).not.toContain(secret);
      }
    }
    // Each event once: nothing was delivered twice.
    const ids = receiver.hits.filter((h) => h.path === '/all').map((h) => h.headers['webhook-id']);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('an endpoint gets only the events it subscribes to; the test event whatever it subscribes to', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const hook = await subscribe(t, client, receiver.url('/only-denied'), ['authorization.denied']);
    const code = await obtainCode(t.baseUrl, client, user);
    expect((await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret })).status).toBe(200);
    const test = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
    expect(test.status).toBe(202);
    const hit = await receiver.next((h) => h.path === '/only-denied');
    expect(hit.event).toMatchObject({ id: test.body.event_id, type: 'webhook.test', data: { client_id: client.client_id, client_name: 'Test App', webhook_id: hook.id } });
    expect(hit.headers['webhook-id']).toBe(test.body.delivery_id);
    expect(receiver.hits.filter((h) => h.path === '/only-denied').map((h) => h.event.type)).toEqual(['webhook.test']);
  });

  test('a receiver that fails twice gets the event on the third attempt: same webhook-id, backoff doubling, each attempt verifiable', async () => {
    const client = await registerClient(t);
    const hook = await subscribe(t, client, receiver.url('/flaky'), ['webhook.test']);
    let failures = 0;
    receiver.respond = (hit) => (hit.path === '/flaky' && failures++ < 2 ? [500, 503][failures - 1]! : 200);
    await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });

    const [delivery] = await eventually(async () => {
      const list = await deliveriesOf(t, client, hook.id);
      return list[0]?.status === 'delivered' ? list : undefined;
    });
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 3, last_status_code: 200, next_attempt_at: null, delivered_at: expect.any(String) });
    const hits = receiver.hits.filter((h) => h.path === '/flaky');
    expect(hits).toHaveLength(3);
    expect(new Set(hits.map((h) => h.headers['webhook-id']))).toEqual(new Set([delivery!.id]));
    for (const hit of hits) expect(verify(hit, hook.secret)).toEqual(hit.event);
    // WEBHOOK_RETRY_BASE_MS=100: first retry after ≥ 80 ms, the second after ≥ 160 ms (±20 % jitter).
    expect(hits[1]!.receivedAt - hits[0]!.receivedAt).toBeGreaterThanOrEqual(75);
    expect(hits[2]!.receivedAt - hits[1]!.receivedAt).toBeGreaterThanOrEqual(155);
  });

  test('a redirect is not followed: 3xx counts as a failure and is retried', async () => {
    const client = await registerClient(t);
    const hook = await subscribe(t, client, receiver.url('/moved'), ['webhook.test']);
    let redirects = 0;
    receiver.respond = (hit) => (hit.path === '/moved' && redirects++ < 1 ? { status: 302, headers: { location: receiver.url('/elsewhere') } } : 200);
    await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
    const [delivery] = await eventually(async () => {
      const list = await deliveriesOf(t, client, hook.id);
      return list[0]?.status === 'delivered' ? list : undefined;
    });
    expect(delivery).toMatchObject({ attempts: 2 });
    expect(receiver.hits.filter((h) => h.path === '/elsewhere')).toEqual([]);
    expect(receiver.hits.filter((h) => h.path === '/moved')).toHaveLength(2);
  });

  test('410 Gone disables the endpoint and cancels its pending deliveries until it is enabled again', async () => {
    const client = await registerClient(t);
    const hook = await subscribe(t, client, receiver.url('/gone'), ['webhook.test', 'client.secret_rotated']);
    receiver.respond = (hit) => (hit.path === '/gone' ? 410 : 200);
    await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
    const endpoint = await eventually(async () => {
      const res = await webhooksApi(t.baseUrl, client, { query: { id: hook.id } });
      return res.body.enabled === false ? res.body : undefined;
    });
    expect(endpoint.disabled_reason).toMatch(/410 Gone/);
    const [cancelled] = await deliveriesOf(t, client, hook.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', attempts: 1, last_status_code: 410, next_attempt_at: null });

    // While disabled: no test event, no new messages.
    const refused = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_request');
    await t.app.records.alone((record) => record.event('client.secret_rotated', { client_id: client.client_id, client_name: 'Test App' }));
    expect(await deliveriesOf(t, client, hook.id)).toHaveLength(1);

    receiver.respond = () => 200;
    const enabled = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'enable' } });
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null });
    const again = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
    expect(again.status).toBe(202);
    const hit = await receiver.next((h) => h.headers['webhook-id'] === again.body.delivery_id);
    expect(hit.event.type).toBe('webhook.test');
  });

  test('a receiver that does not answer within 10 s is timed out and retried', async () => {
    const client = await registerClient(t);
    const hook = await subscribe(t, client, receiver.url('/slow'), ['webhook.test']);
    receiver.respond = (hit) => (hit.path === '/slow' ? 'hang' : 200);
    const started = Date.now();
    await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
    const [delivery] = await eventually(async () => {
      const list = await deliveriesOf(t, client, hook.id);
      return list[0]?.attempts === 1 ? list : undefined;
    }, 25_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(10_000);
    expect(delivery).toMatchObject({ status: 'pending', last_status_code: null, last_error: 'no response within 10 s', next_attempt_at: expect.any(String) });
    receiver.respond = () => 200;
    await eventually(async () => ((await deliveriesOf(t, client, hook.id))[0]?.status === 'delivered' ? true : undefined), 15_000);
  }, 45_000);

  test('a connection error is retried', async () => {
    const client = await registerClient(t);
    const closed = await startReceiver();
    const url = closed.url('/down');
    await closed.close();
    const hook = await subscribe(t, client, url, ['webhook.test']);
    await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
    const [delivery] = await eventually(async () => {
      const list = await deliveriesOf(t, client, hook.id);
      return (list[0]?.attempts as number) >= 1 ? list : undefined;
    });
    expect(delivery).toMatchObject({ status: 'pending', last_status_code: null, last_error: expect.stringMatching(/ECONNREFUSED/) });
    await webhooksApi(t.baseUrl, client, { method: 'DELETE', query: { id: hook.id } });
  });
});

describe('giving up', () => {
  test('after 15 attempts a message is marked failed', async () => {
    const t = await startTestApp({ mode: 'postgres', env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '1' } });
    const receiver = await startReceiver();
    receiver.respond = () => 500;
    try {
      const client = await registerClient(t);
      const hook = await subscribe(t, client, receiver.url(), ['webhook.test']);
      await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
      const [delivery] = await eventually(async () => {
        const list = await deliveriesOf(t, client, hook.id);
        return list[0]?.status === 'failed' ? list : undefined;
      }, 25_000);
      expect(delivery).toMatchObject({ attempts: 15, last_status_code: 500, last_error: 'the endpoint answered 500', next_attempt_at: null });
      expect(receiver.hits).toHaveLength(15);
    } finally {
      await t.close();
      await receiver.close();
    }
  }, 40_000);
});

describe('durability', () => {
  test('an event raised while the receiver is down is delivered after a service restart once it is back', async () => {
    let t = await startTestApp({ mode: 'postgres', env: ALLOW_LOCAL });
    const probe = await startReceiver();
    const port = new URL(probe.origin).port;
    await probe.close(); // the receiver is down
    let receiver: Receiver | undefined;
    try {
      const client = await registerClient(t);
      const hook = await subscribe(t, client, `http://127.0.0.1:${port}/back`, ['client.secret_rotated']);
      await t.app.records.alone((record) => record.event('client.secret_rotated', { client_id: client.client_id, client_name: 'Test App' }));
      await eventually(async () => (((await deliveriesOf(t, client, hook.id))[0]?.attempts as number) >= 1 ? true : undefined));
      await t.close({ keepData: true });

      receiver = await startReceiver(Number(port));
      t = await startTestApp({ reuse: t.env });
      const hit = await receiver.next((h) => h.path === '/back', 10_000);
      expect(hit.event.type).toBe('client.secret_rotated');
      expect(verify(hit, hook.secret)).toBeTruthy();
      const [delivery] = await eventually(async () => {
        const list = await deliveriesOf(t, client, hook.id);
        return list[0]?.status === 'delivered' ? list : undefined;
      });
      expect(delivery!.attempts).toBeGreaterThanOrEqual(2);
    } finally {
      await t.close();
      await receiver?.close();
    }
  });

  test('closing the app releases the messages it had claimed, untried', async () => {
    const t = await startTestApp({ mode: 'postgres', env: ALLOW_LOCAL });
    const receiver = await startReceiver();
    receiver.respond = () => 'hang';
    try {
      const client = await registerClient(t);
      const hook = await subscribe(t, client, receiver.url(), ['webhook.test']);
      await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
      await receiver.next(() => true);
      await t.close({ keepData: true });
      const { Client } = await import('pg');
      const db = new Client({ connectionString: t.env.DATABASE_URL });
      await db.connect();
      try {
        const { rows } = await db.query('SELECT status, attempts, lease_owner, lease_expires_at FROM webhook_deliveries');
        expect(rows).toEqual([{ status: 'pending', attempts: 0, lease_owner: null, lease_expires_at: null }]);
      } finally {
        await db.end();
      }
    } finally {
      await receiver.close();
      const { dropDatabase } = await import('../helpers/services.js');
      await dropDatabase(t.env.DATABASE_URL!);
    }
  });
});

describe('SSRF at connect time (DNS rebinding)', () => {
  test('a name registered while allowed, that resolves to loopback when private networks are not allowed, is never contacted', async () => {
    let t = await startTestApp({ mode: 'postgres', env: ALLOW_LOCAL });
    const receiver = await startReceiver();
    try {
      const client = await registerClient(t);
      const url = `http://localhost:${new URL(receiver.origin).port}/rebound`;
      const hook = await subscribe(t, client, url, ['webhook.test']);
      await t.close({ keepData: true });
      t = await startTestApp({ reuse: t.env, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } });

      await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: hook.id, action: 'test' } });
      const [delivery] = await eventually(async () => {
        const list = await deliveriesOf(t, client, hook.id);
        return (list[0]?.attempts as number) >= 1 ? list : undefined;
      });
      expect(delivery).toMatchObject({ status: 'pending', last_status_code: null, last_error: expect.stringMatching(/^destination not allowed: localhost resolves to .*loopback/) });
      expect(receiver.hits).toEqual([]);
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});
