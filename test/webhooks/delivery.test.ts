/**
 * Delivery: events reach a real local receiver at once, signed (Standard Webhooks), and are
 * retried with backoff when the receiver fails; redirects are not followed; 410 disables the
 * endpoint; a hanging receiver times out; the outbox survives a restart.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { obtainCode } from '../helpers/browser.js';
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

  test('token.issued reaches the receiver within a second of the code exchange, and its signature verifies', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const hook = await subscribe(t, client, receiver.url('/issued'), ['token.issued']);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);

    const code = await obtainCode(t.baseUrl, client, user);
    const exchangedAt = Date.now();
    const token = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    expect(token.status).toBe(200);

    const hit = await receiver.next((h) => h.path === '/issued', 1000);
    expect(hit.receivedAt - exchangedAt).toBeLessThan(1000);
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
      data: { client_id: client.client_id, client_name: 'Test App', username: user.username, scope: 'openid', grant_id: expect.any(String) },
    });
    expect(hit.body).not.toContain(String(token.body.access_token));
    expect(hit.body).not.toContain(code);
    expect(hit.body).not.toContain(client.client_secret);
  });
});
