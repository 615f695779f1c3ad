/**
 * `/api/webhooks.php`: a client's endpoints through HTTP Basic client credentials. Secrets
 * are shown only at creation; bad input is 400 invalid_request; another client's or an
 * unknown endpoint is 404 not_found; wrong or missing credentials are 401 invalid_client.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectErrorResponse, registerClient } from '../helpers/fixtures.js';
import { webhooksApi } from '../helpers/receiver.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

let t: TestApp;
let client: Awaited<ReturnType<typeof registerClient>>;
let other: Awaited<ReturnType<typeof registerClient>>;
const HOOK = 'http://127.0.0.1:9/hook';

beforeAll(async () => {
  t = await startTestApp({ mode: 'postgres', env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
  client = await registerClient(t);
  other = await registerClient(t);
});
afterAll(async () => { await t?.close(); });

describe('authentication', () => {
  test.each([
    ['no credentials', {}],
    ['a wrong secret', { authorization: `Basic ${Buffer.from('x:y').toString('base64')}` }],
    ['a bearer token', { authorization: 'Bearer abc' }],
    ['malformed Basic', { authorization: 'Basic !!!' }],
  ])('%s: 401 invalid_client with a Basic challenge', async (_label, headers) => {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const res = await fetch(`${t.baseUrl}/api/webhooks.php?id=ep_x`, { method, headers });
      const body = await res.json() as Record<string, unknown>;
      expectErrorResponse({ status: res.status, headers: res.headers, body }, 401, 'invalid_client');
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="webhooks"/);
    }
  });

  test("another client's secret does not open this client's endpoints", async () => {
    const res = await webhooksApi(t.baseUrl, { client_id: client.client_id, client_secret: other.client_secret });
    expectErrorResponse(res, 401, 'invalid_client');
  });
});

describe('create, list, read, delete', () => {
  test('POST → 201 with the secret once; GET lists without secrets; duplicates merged', async () => {
    const created = await webhooksApi(t.baseUrl, client, { json: { url: HOOK, events: ['token.issued', 'authorization.granted', 'token.issued'] } });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    expect(created.body).toEqual({
      id: expect.stringMatching(/^ep_/), url: HOOK, events: ['authorization.granted', 'token.issued'],
      enabled: true, disabled_reason: null, created_at: expect.any(String), previous_secret_expires_at: null, secret: expect.stringMatching(/^whsec_/),
    });
    const list = await webhooksApi(t.baseUrl, client);
    expect(list.status).toBe(200);
    expect(list.body.webhooks).toContainEqual({ ...created.body, secret: undefined });
    expect(JSON.stringify(list.body)).not.toContain('whsec_');
    const one = await webhooksApi(t.baseUrl, client, { query: { id: String(created.body.id) } });
    expect(one.body).toEqual(list.body.webhooks && (list.body.webhooks as unknown[]).find((w) => (w as { id: string }).id === created.body.id));
    expect(JSON.stringify(one.body)).not.toContain('whsec_');

    // The other client sees none of it.
    expect((await webhooksApi(t.baseUrl, other)).body).toEqual({ webhooks: [] });

    const deleted = await webhooksApi(t.baseUrl, client, { method: 'DELETE', query: { id: String(created.body.id) } });
    expect(deleted.status).toBe(204);
    expectErrorResponse(await webhooksApi(t.baseUrl, client, { method: 'DELETE', query: { id: String(created.body.id) } }), 404, 'not_found');
  });

  test("another client's id or an unknown id is 404 not_found, for every operation", async () => {
    const mine = await webhooksApi(t.baseUrl, client, { json: { url: HOOK, events: ['webhook.test'] } });
    const id = String(mine.body.id);
    for (const target of [id, 'ep_unknown', 'not-an-id']) {
      expectErrorResponse(await webhooksApi(t.baseUrl, other, { query: { id: target } }), 404, 'not_found');
      expectErrorResponse(await webhooksApi(t.baseUrl, other, { query: { id: target, action: 'deliveries' } }), 404, 'not_found');
      expectErrorResponse(await webhooksApi(t.baseUrl, other, { method: 'POST', query: { id: target, action: 'test' } }), 404, 'not_found');
      expectErrorResponse(await webhooksApi(t.baseUrl, other, { method: 'POST', query: { id: target, action: 'disable' } }), 404, 'not_found');
      expectErrorResponse(await webhooksApi(t.baseUrl, other, { method: 'DELETE', query: { id: target } }), 404, 'not_found');
    }
    expect((await webhooksApi(t.baseUrl, client, { query: { id } })).status).toBe(200);
  });

  test('disable and enable', async () => {
    const { body } = await webhooksApi(t.baseUrl, client, { json: { url: HOOK, events: ['webhook.test'] } });
    const disabled = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: String(body.id), action: 'disable' } });
    expect(disabled.body).toMatchObject({ enabled: false, disabled_reason: 'disabled in the settings' });
    const enabled = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: String(body.id), action: 'enable' } });
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null });
  });

  test('a POST that is not JSON changes nothing, with a body or without: what a cross-site page could send with credentials the browser kept', async () => {
    const { body } = await webhooksApi(t.baseUrl, client, { json: { url: HOOK, events: ['webhook.test'] } });
    const id = String(body.id);
    const auth = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
    for (const [action, headers, sent] of [
      ['disable', {}, undefined], // a body-less POST: no Content-Type at all
      ['rotate_secret', { 'content-type': 'application/x-www-form-urlencoded' }, 'grace=0'],
      ['disable', { 'content-type': 'text/plain' }, ''],
      ['test', { 'content-type': 'multipart/form-data; boundary=x' }, '--x--'],
    ] as const) {
      const res = await fetch(`${t.baseUrl}/api/webhooks.php?id=${id}&action=${action}`, { method: 'POST', headers: { authorization: auth, ...headers }, body: sent });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('application/json') });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
    const after = await webhooksApi(t.baseUrl, client, { query: { id } });
    expect(after.body).toMatchObject({ enabled: true, previous_secret_expires_at: null });
    expect((await webhooksApi(t.baseUrl, client, { query: { id, action: 'deliveries' } })).body.deliveries).toEqual([]);
    // The same actions as JSON, without a body: done.
    expect((await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'disable' } })).body).toMatchObject({ enabled: false });
  });

  test('the delivery log of an endpoint, newest first', async () => {
    const { body } = await webhooksApi(t.baseUrl, client, { json: { url: HOOK, events: ['webhook.test'] } });
    const id = String(body.id);
    const first = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'test' } });
    const second = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'test' } });
    expect(first.status).toBe(202);
    const log = await webhooksApi(t.baseUrl, client, { query: { id, action: 'deliveries' } });
    expect(log.status).toBe(200);
    const deliveries = log.body.deliveries as Record<string, unknown>[];
    expect(deliveries.map((d) => d.id).sort()).toEqual([first.body.delivery_id, second.body.delivery_id].sort());
    // Nothing listens on port 9: the log shows pending attempts that failed to connect.
    expect(Object.keys(deliveries[0]!).sort()).toEqual([
      'attempts', 'created_at', 'delivered_at', 'event_id', 'event_type', 'id', 'last_attempt_at', 'last_error',
      'last_status_code', 'next_attempt_at', 'status', 'webhook_id',
    ]);
    expect(deliveries[0]).toMatchObject({
      id: expect.stringMatching(/^msg_/), webhook_id: id, event_id: expect.stringMatching(/^evt_/), event_type: 'webhook.test',
      status: 'pending', attempts: expect.any(Number), last_status_code: null, created_at: expect.any(String), delivered_at: null,
    });
    expect(Date.parse(String(deliveries[1]!.created_at))).toBeLessThanOrEqual(Date.parse(String(deliveries[0]!.created_at)));
    const limited = await webhooksApi(t.baseUrl, client, { query: { id, action: 'deliveries', limit: '1' } });
    expect(limited.body.deliveries).toHaveLength(1);
    expectErrorResponse(await webhooksApi(t.baseUrl, client, { query: { id, action: 'deliveries', limit: '0' } }), 400, 'invalid_request');
  });
});

describe('bad input → 400 invalid_request', () => {
  test.each([
    ['no url', { events: ['token.issued'] }, /url is required/],
    ['a url that is not a string', { url: 42, events: ['token.issued'] }, /url is required/],
    ['a relative url', { url: '/hook', events: ['token.issued'] }, /absolute/],
    ['an unresolvable host', { url: 'https://no-such-host.invalid/hook', events: ['token.issued'] }, /cannot be resolved/],
    ['a metadata address', { url: 'http://169.254.169.254/latest', events: ['token.issued'] }, /link-local, metadata/],
    ['its IPv4-mapped IPv6 spelling', { url: 'http://[::ffff:169.254.169.254]/', events: ['token.issued'] }, /link-local, metadata/],
    ['credentials in the url', { url: 'http://u:p@127.0.0.1/', events: ['token.issued'] }, /credentials/],
    ['no events', { url: HOOK }, /non-empty list/],
    ['an empty events list', { url: HOOK, events: [] }, /non-empty list/],
    ['events not a list', { url: HOOK, events: 'token.issued' }, /non-empty list/],
    ['an unknown event type', { url: HOOK, events: ['token.issued', 'token.stolen'] }, /unknown event type "token.stolen"/],
    ['a body that is a list', [HOOK], /JSON object/],
  ])('%s', async (_label, json, message) => {
    const res = await webhooksApi(t.baseUrl, client, { json });
    expectErrorResponse(res, 400, 'invalid_request');
    expect(res.body.error_description).toMatch(message);
  });

  test('a form body and malformed JSON are 400 invalid_request', async () => {
    const form = await webhooksApi(t.baseUrl, client, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectErrorResponse(form, 400, 'invalid_request');
    const auth = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
    const res = await fetch(`${t.baseUrl}/api/webhooks.php`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{"url":' });
    expectErrorResponse({ status: res.status, headers: res.headers, body: await res.json() as Record<string, unknown> }, 400, 'invalid_request');
  });

  test('without private networks allowed, loopback is refused at registration', async () => {
    const strict = await startTestApp();
    try {
      const c = await registerClient(strict);
      for (const url of ['http://127.0.0.1/hook', 'http://localhost/hook', 'http://[::1]/hook', 'http://2130706433/hook', 'http://10.0.0.1/']) {
        const res = await webhooksApi(strict.baseUrl, c, { json: { url, events: ['token.issued'] } });
        expectErrorResponse(res, 400, 'invalid_request');
        expect(res.body.error_description).toMatch(/loopback, private or shared/);
      }
    } finally {
      await strict.close();
    }
  });

  test('an unknown action, a repeated id, an action without id, another method', async () => {
    expectErrorResponse(await webhooksApi(t.baseUrl, client, { query: { id: 'ep_x', action: 'explode' } }), 400, 'invalid_request');
    expectErrorResponse(await webhooksApi(t.baseUrl, client, { query: { action: 'deliveries' } }), 400, 'invalid_request');
    expectErrorResponse(await webhooksApi(t.baseUrl, client, { method: 'DELETE' }), 400, 'invalid_request');
    const repeated = await fetch(`${t.baseUrl}/api/webhooks.php?id=a&id=b`, { headers: { authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` } });
    expect(repeated.status).toBe(400);
    const put = await webhooksApi(t.baseUrl, client, { method: 'PUT' });
    expectErrorResponse(put, 405, 'method_not_allowed');
    expect(put.headers.get('allow')).toBe('GET, POST, DELETE, HEAD, OPTIONS');
  });

  test('at most 10 endpoints per client', async () => {
    const c = await registerClient(t);
    for (let i = 0; i < 10; i += 1) expect((await webhooksApi(t.baseUrl, c, { json: { url: `${HOOK}${i}`, events: ['token.issued'] } })).status).toBe(201);
    const eleventh = await webhooksApi(t.baseUrl, c, { json: { url: HOOK, events: ['token.issued'] } });
    expectErrorResponse(eleventh, 400, 'invalid_request');
    expect(eleventh.body.error_description).toMatch(/at most 10/);
  });
});
