/**
 * Rotating a webhook signing secret (`POST /api/webhooks.php?id=…&action=rotate_secret[&grace=…]`
 * and the settings page's button): the new secret is returned this once; until the grace ends
 * every delivery carries both signatures, so a receiver that knows only the old secret and one
 * that knows only the new both verify it (Standard Webhooks: any signature may match); then the
 * old one stops signing. A grace of 0 drops it at once. Audited as `webhook.secret_rotated`.
 * Bad input changes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import { expectErrorResponse, registerClient } from '../helpers/fixtures.js';
import { startReceiver, verifies, webhooksApi } from '../helpers/receiver.js';
import type { Hit, Receiver } from '../helpers/receiver.js';
import { pageText, postSettingsForm, signInOnSettingsPage } from '../helpers/settings-page.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

let t: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', CLIENT_SECRET_ROTATION_GRACE: '2h' } });
  receiver = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

type Client = Awaited<ReturnType<typeof registerClient>>;

async function endpointOf(client: Client, path: string) {
  const res = await webhooksApi(t.baseUrl, client, { json: { url: receiver.url(path), events: ['client.updated'] } });
  expect(res.status).toBe(201);
  return { id: String(res.body.id), secret: String(res.body.secret) };
}

/** Sends a test event and waits for its delivery. */
async function delivered(client: Client, id: string): Promise<Hit> {
  const queued = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'test' } });
  expect(queued.status).toBe(202);
  return receiver.next((hit) => hit.headers['webhook-id'] === queued.body.delivery_id);
}


describe('POST /api/webhooks.php?action=rotate_secret', () => {
  test('the new secret once; in the grace both signatures (new first), each verifying alone; then only the new', async () => {
    const client = await registerClient(t);
    const { id, secret: old } = await endpointOf(client, '/overlap');
    const before = Date.now();
    const rotated = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'rotate_secret', grace: '5s' } });
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    const fresh = String(rotated.body.secret);
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(old);
    const until = Date.parse(String(rotated.body.previous_secret_expires_at));
    expect(until - before).toBeGreaterThanOrEqual(5000);
    expect(until - Date.now()).toBeLessThanOrEqual(6000);
    // Shown this once: the endpoint as listed has neither secret.
    const listed = await webhooksApi(t.baseUrl, client, { query: { id } });
    expect(listed.body).toEqual({ ...rotated.body, secret: undefined });
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');

    let overlapping = 0;
    while (Date.now() < until - 1000) {
      const hit = await delivered(client, id);
      if (Number(hit.headers['webhook-timestamp']) * 1000 >= until - 1000) break;
      const [first, second] = String(hit.headers['webhook-signature']).split(' ');
      expect(second).toBeDefined();
      const alone = (signature: string) => ({ ...hit, headers: { ...hit.headers, 'webhook-signature': signature } });
      expect([verifies(alone(first!), fresh), verifies(alone(second!), old)]).toEqual([true, true]); // the new secret's first
      expect({ old: verifies(hit, old), fresh: verifies(hit, fresh) }).toEqual({ old: true, fresh: true });
      overlapping += 1;
    }
    expect(overlapping).toBeGreaterThan(0);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, until - Date.now()) + 50));
    const after = await delivered(client, id);
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect({ old: verifies(after, old), fresh: verifies(after, fresh) }).toEqual({ old: false, fresh: true });

    const row = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { clientId: client.client_id, event: 'webhook.secret_rotated' } });
    expect(row).toMatchObject({ actor: `client:${client.client_id}`, detail: { webhook_id: id, grace: '5s', previous_secret_expires_at: rotated.body.previous_secret_expires_at } });
    expect(JSON.stringify(row.detail)).not.toContain(fresh);
    expect(JSON.stringify(row.detail)).not.toContain(old);
  });

  test('grace=0 drops the old secret at once; no grace uses CLIENT_SECRET_ROTATION_GRACE; rotating again ends the older secret', async () => {
    const client = await registerClient(t);
    const { id, secret: first } = await endpointOf(client, '/zero');
    const zero = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'rotate_secret', grace: '0' } });
    const second = String(zero.body.secret);
    const hit = await delivered(client, id);
    expect({ first: verifies(hit, first), second: verifies(hit, second) }).toEqual({ first: false, second: true });

    const before = Date.now();
    const byDefault = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'rotate_secret' } });
    expect(Date.parse(String(byDefault.body.previous_secret_expires_at)) - before).toBeGreaterThanOrEqual(2 * 3_600_000);
    const third = String(byDefault.body.secret);
    const again = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'rotate_secret', grace: '1h' } });
    const fourth = String(again.body.secret);
    const latest = await delivered(client, id);
    expect([first, second, third, fourth].map((secret) => verifies(latest, secret))).toEqual([false, false, true, true]);
  });

  test("a grace that is not a duration, another client's or a deleted endpoint: clear errors, nothing changed", async () => {
    const client = await registerClient(t);
    const other = await registerClient(t);
    const { id } = await endpointOf(client, '/refused');
    const stored = () => t.app.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id } });
    const unchanged = await stored();
    for (const grace of ['forever', '15', '-1h', '31d']) {
      const res = await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'rotate_secret', grace } });
      expectErrorResponse(res, 400, 'invalid_request');
      expect(res.body.error_description).toBe(`grace must be a duration such as 0, 30s, 15m, 1h or 7d (at most 30d), got "${grace}"`);
    }
    const twice = await fetch(`${t.baseUrl}/api/webhooks.php?id=${id}&action=rotate_secret&grace=1h&grace=2h`, {
      method: 'POST', headers: { authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` },
    });
    expect(twice.status).toBe(400);
    expectErrorResponse(await webhooksApi(t.baseUrl, other, { method: 'POST', query: { id, action: 'rotate_secret' } }), 404, 'not_found');
    expect(await stored()).toEqual(unchanged);

    expect((await webhooksApi(t.baseUrl, client, { method: 'DELETE', query: { id } })).status).toBe(204);
    expectErrorResponse(await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id, action: 'rotate_secret' } }), 404, 'not_found');
    expectErrorResponse(await webhooksApi(t.baseUrl, client, { method: 'POST', query: { id: 'not-an-id', action: 'rotate_secret' } }), 404, 'not_found');
    expect(await t.app.db.prisma.auditEvent.count({ where: { event: 'webhook.secret_rotated', clientId: { in: [client.client_id, other.client_id] } } })).toBe(0);
  });
});

describe('the settings page', () => {
  test('a button per endpoint with a grace choice: the new secret shown once, the overlap shown, both signatures verify', async () => {
    const client = await registerClient(t);
    const { id, secret: old } = await endpointOf(client, '/page');
    const browser = new Browser(t.baseUrl);
    const page = await signInOnSettingsPage(browser, client);
    expect(page.body).toContain(`id="rotate-secret-${id}"`);
    expect(page.body).toMatch(new RegExp(`<select[^>]*id="grace-${id}"`));

    const rotated = await postSettingsForm(browser, page, 'rotate_webhook_secret', { grace: '1h' }, id);
    expect(rotated.status).toBe(200);
    const fresh = pageText(rotated, 'new_webhook_secret')!;
    expect(fresh).toMatch(/^whsec_/);
    expect(rotated.body).toMatch(/id="new_webhook_secret_overlap">Until <time datetime="([^"]+)">\1<\/time>, every delivery is signed with the old secret too/);
    expect(rotated.body).toContain('old secret signs too until');
    expect((await browser.request('/api/settings.php')).body).not.toContain(fresh);
    const hit = await delivered(client, id);
    expect({ old: verifies(hit, old), fresh: verifies(hit, fresh) }).toEqual({ old: true, fresh: true });

    const zero = await postSettingsForm(browser, await browser.request('/api/settings.php'), 'rotate_webhook_secret', { grace: '0' }, id);
    expect(pageText(zero, 'new_webhook_secret_overlap')).toBe('The old secret no longer signs deliveries.');
    const bad = await postSettingsForm(browser, await browser.request('/api/settings.php'), 'rotate_webhook_secret', { grace: 'soon' }, id);
    expect(bad.status).toBe(400);
    expect(pageText(bad, 'error')).toMatch(/^grace must be a duration/);
    const csrf = /name="_csrf" value="([^"]*)"/.exec(bad.body)![1]!;
    const missing = await browser.request('/api/settings.php?action=rotate_webhook_secret&id=ep_missing', { form: { _csrf: csrf } });
    expect(missing.status).toBe(404);
    expect(await t.app.db.prisma.auditEvent.count({ where: { event: 'webhook.secret_rotated', clientId: client.client_id } })).toBe(2);
  });
});
