/**
 * The application settings page `/api/settings.php`, walked as a browser: sign-in with the
 * client's credentials (CSRF-protected, its own session), rename and redirect change (with
 * client.updated), secret rotation (the old secret works for the grace chosen, or stops at once;
 * it can be ended early; other sessions end),
 * webhook endpoints with event checkboxes, recent deliveries, test events.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import { createUser, expectErrorResponse, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { startReceiver, verify, webhooksApi } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { pageText as text, postSettingsForm as post, signInOnSettingsPage as signIn, unescapeHtml as unescape } from '../helpers/settings-page.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

let t: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  t = await startTestApp({ mode: 'postgres', env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '100' } });
  receiver = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('a tab left open on another application', () => {
  test('its forms change nothing once this browser has signed in as another application: 409 and a readable page', async () => {
    const x = await registerClient(t, 'https://x.example/cb', 'App X');
    const y = await registerClient(t, 'https://y.example/cb', 'App Y');
    const browser = new Browser(t.baseUrl);
    const staleTab = await signIn(browser, x);
    const shown = /name="for_client" value="([^"]*)"/.exec(staleTab.body)?.[1];
    expect(shown).toBe(x.client_id);
    // Another tab of the same browser signs out and in as App Y.
    await post(browser, await browser.request('/api/settings.php'), 'sign_out');
    const yPage = await signIn(browser, y);
    // The stale tab's token was renewed at the sign-in (ui/csrf.ts): 403, nothing changed.
    const stale = await post(browser, staleTab, 'update_client', { for_client: shown!, client_name: 'App X v2', redirect_uri: 'https://x.example/cb' });
    expect(stale.status).toBe(403);
    // With this browser's current token, the form naming App X still changes nothing.
    const token = /name="_csrf" value="([^"]*)"/.exec(yPage.body)![1]!;
    const res = await browser.request('/api/settings.php?action=update_client', { form: { _csrf: token, for_client: shown!, client_name: 'App X v2', redirect_uri: 'https://x.example/cb' } });
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(unescape(res.body)).toContain(`signed in to settings as App Y (${y.client_id}) since. Nothing was changed`);
    const stored = await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: y.client_id } });
    expect([stored.clientName, stored.redirectUri]).toEqual(['App Y', 'https://y.example/cb']);
    // The page of the application signed in now still works.
    const current = await browser.request('/api/settings.php');
    expect((await post(browser, current, 'update_client', { for_client: y.client_id, client_name: 'App Y v2', redirect_uri: 'https://y.example/cb' })).status).toBe(200);
  });
});

describe('sign-in', () => {
  test('the page asks for client_id and client_secret; wrong ones are refused with a readable page', async () => {
    const client = await registerClient(t);
    const browser = new Browser(t.baseUrl);
    const page = await browser.request('/api/settings.php');
    expect(page.status).toBe(200);
    expect(page.body).toContain('id="sign_in"');
    expect(page.body).toContain('id="client_id"');
    expect(page.body).toContain('id="client_secret"');

    const wrong = await post(browser, page, 'sign_in', { client_id: client.client_id, client_secret: 'nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('content-type')).toMatch(/^text\/html/);
    expect(text(wrong, 'error')).toBe('Unknown client_id or wrong client_secret.');

    const ok = await post(browser, wrong, 'sign_in', { client_id: client.client_id, client_secret: client.client_secret });
    expect(ok.status).toBe(200);
    expect(text(ok, 'client_id')).toBe(client.client_id);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    const cookie = browser.setCookies.find((line) => line.startsWith('settings_session='))!;
    expect(cookie).toMatch(/path=\/api\/settings\.php/i);
    expect(cookie).toMatch(/httponly/i);
    expect(cookie).toMatch(/samesite=strict/i);
    expect(cookie).toMatch(/expires=/i);
  });

  test('a post without the CSRF token is refused (403 page), signed in or not', async () => {
    const client = await registerClient(t);
    const browser = new Browser(t.baseUrl);
    await browser.request('/api/settings.php');
    const forged = await browser.request('/api/settings.php?action=sign_in', { form: { client_id: client.client_id, client_secret: client.client_secret } });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('content-type')).toMatch(/^text\/html/);
    expect(browser.setCookies.some((line) => line.startsWith('settings_session='))).toBe(false);

    await signIn(browser, client);
    const rotate = await browser.request('/api/settings.php?action=rotate_secret', { form: { _csrf: 'forged' } });
    expect(rotate.status).toBe(403);
    // Nothing was rotated: the original secret still signs in.
    expect((await signIn(new Browser(t.baseUrl), client)).status).toBe(200);
  });

  test('without a session, a settings post shows the sign-in page (401)', async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.request('/api/settings.php');
    const csrf = /name="_csrf" value="([^"]*)"/.exec(page.body)![1]!;
    const res = await browser.request('/api/settings.php?action=rotate_secret', { form: { _csrf: csrf } });
    expect(res.status).toBe(401);
    expect(text(res, 'error')).toMatch(/session has ended/);
    expect(res.body).toContain('id="sign_in"');
  });

  test('sign-out ends the session', async () => {
    const client = await registerClient(t);
    const browser = new Browser(t.baseUrl);
    const page = await signIn(browser, client);
    const out = await post(browser, page, 'sign_out');
    expect(text(out, 'notice')).toBe('Signed out.');
    expect((await browser.request('/api/settings.php')).body).toContain('id="sign_in"');
  });
});

describe('signed in', () => {
  test('webhooks from the page, rename and redirect change (client.updated), bad input kept on a readable page', async () => {
    const user = await createUser(t);
    const client = await registerClient(t, 'http://localhost:9999/callback', 'Before');
    const browser = new Browser(t.baseUrl);
    let page = await signIn(browser, client);
    expect(page.body).toContain('id="no_webhooks"');
    for (const type of ['authorization.granted', 'token.issued', 'client.updated', 'client.secret_rotated', 'webhook.test']) {
      expect(page.body).toContain(`id="event_${type.replace('.', '_')}"`);
    }

    // Bad input: the page says why and keeps what was typed.
    const noEvents = await post(browser, page, 'add_webhook', { url: receiver.url('/page') });
    expect(noEvents.status).toBe(400);
    expect(text(noEvents, 'error')).toMatch(/events must be a non-empty list/);
    expect(noEvents.body).toContain(`value="${receiver.url('/page')}"`);
    const badUrl = await post(browser, page, 'add_webhook', { url: 'http://169.254.169.254/', events: 'client.updated' });
    expect(badUrl.status).toBe(400);
    expect(text(badUrl, 'error')).toMatch(/link-local, metadata/);
    expect(badUrl.body).toMatch(/id="event_client_updated"[^>]*checked/);

    const added = await post(browser, page, 'add_webhook', { url: receiver.url('/page'), events: ['client.updated', 'client.secret_rotated', 'webhook.test'] });
    expect(added.status).toBe(201);
    const secret = text(added, 'new_webhook_secret')!;
    expect(secret).toMatch(/^whsec_/);
    expect(added.body).toContain('id="webhooks"');
    expect(added.body).toContain('client.updated, client.secret_rotated, webhook.test');
    page = await browser.request('/api/settings.php');
    expect(page.body).not.toContain(secret); // shown once

    const badRedirect = await post(browser, page, 'update_client', { client_name: 'After', redirect_uri: 'http://evil.example/cb' });
    expect(badRedirect.status).toBe(400);
    expect(text(badRedirect, 'error')).toMatch(/redirect_uri must use https/);
    expect(badRedirect.body).toContain('value="http://evil.example/cb"');
    const emptyName = await post(browser, page, 'update_client', { client_name: '  ', redirect_uri: client.redirect_uri });
    expect(text(emptyName, 'error')).toBe('client_name is required');

    const saved = await post(browser, page, 'update_client', { client_name: 'After', redirect_uri: 'http://localhost:9999/new-callback' });
    expect(saved.status).toBe(200);
    expect(text(saved, 'notice')).toMatch(/^Saved/);
    expect(saved.body).toContain('value="After"');
    const updated = await receiver.next((h) => h.path === '/page' && h.event.type === 'client.updated');
    expect(verify(updated, secret)).toMatchObject({
      type: 'client.updated',
      data: { client_id: client.client_id, client_name: 'After', redirect_uri: 'http://localhost:9999/new-callback', changed: ['client_name', 'redirect_uri'] },
    });
    const unchanged = await post(browser, saved, 'update_client', { client_name: 'After', redirect_uri: 'http://localhost:9999/new-callback' });
    expect(text(unchanged, 'notice')).toBe('Nothing changed.');

    // The new redirect URI is the registered one now; the old one is refused.
    const flow = await new Browser(t.baseUrl).authorize({ ...client, redirect_uri: 'http://localhost:9999/new-callback' }, user);
    expect(flow.pathname).toBe('/new-callback');
    expect(flow.searchParams.get('code')).toBeTruthy();
    const old = await new Browser(t.baseUrl).follow(`/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`);
    expect(old.status).toBe(400);
    expect(old.location).toBeUndefined();

    // Test event, then the deliveries table.
    const endpointId = /data-webhook-id="([^"]+)"/.exec(saved.body)![1]!;
    const sent = await post(browser, saved, 'test_webhook', {}, endpointId);
    expect(text(sent, 'notice')).toMatch(/Test event queued/);
    const testHit = await receiver.next((h) => h.path === '/page' && h.event.type === 'webhook.test');
    expect(verify(testHit, secret)).toMatchObject({ data: { webhook_id: endpointId, client_name: 'After' } });
    const deadline = Date.now() + 5000;
    let log = await browser.request('/api/settings.php');
    while (!/class="delivery-event">webhook.test<\/td><td class="delivery-endpoint">[^<]*<\/td><td class="delivery-status">delivered/.test(log.body) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      log = await browser.request('/api/settings.php');
    }
    expect(log.body).toContain('id="deliveries"');
    expect(log.body).toMatch(/class="delivery-event">webhook.test<\/td><td class="delivery-endpoint">[^<]*<\/td><td class="delivery-status">delivered<\/td><td class="delivery-attempts">1<\/td><td class="delivery-response">200</);
    expect(log.body).toMatch(/class="delivery-event">client.updated</);
    for (const header of ['Time', 'Event', 'Status', 'Attempts', 'Response', 'Next retry']) expect(log.body).toContain(`<th>${header}</th>`);

    // Disable, enable, remove.
    const disabled = await post(browser, log, 'disable_webhook', {}, endpointId);
    expect(text(disabled, 'notice')).toMatch(/disabled/);
    expect(disabled.body).toMatch(/class="webhook-state">disabled: disabled in the settings/);
    const enabled = await post(browser, disabled, 'enable_webhook', {}, endpointId);
    expect(enabled.body).toMatch(/class="webhook-state">enabled/);
    const removed = await post(browser, enabled, 'delete_webhook', {}, endpointId);
    expect(text(removed, 'notice')).toBe('Webhook endpoint removed.');
    expect(removed.body).toContain('id="no_webhooks"');

    // Audited as the client acting from this page ("Nothing changed" writes no row).
    const audited = await t.app.db.prisma.auditEvent.findMany({ where: { clientId: client.client_id, actor: `client:${client.client_id}` }, orderBy: { id: 'asc' } });
    expect(audited.map((row) => [row.event, row.actor, row.address, typeof row.requestId])).toEqual([
      ['webhook.endpoint_added', `client:${client.client_id}`, '127.0.0.1', 'string'],
      ['client.updated', `client:${client.client_id}`, '127.0.0.1', 'string'],
      ['webhook.endpoint_removed', `client:${client.client_id}`, '127.0.0.1', 'string'],
    ]);
    expect(audited[1]!.detail).toEqual({ client_id: client.client_id, client_name: 'After', redirect_uri: 'http://localhost:9999/new-callback', changed: ['client_name', 'redirect_uri'] });

    // Another client's endpoint id, or a made-up one: a readable 404.
    const csrf = /name="_csrf" value="([^"]*)"/.exec(removed.body)![1]!;
    const missing = await browser.request(`/api/settings.php?action=delete_webhook&id=${endpointId}`, { form: { _csrf: csrf } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^text\/html/);
    const unknown = await browser.request('/api/settings.php?action=explode', { form: { _csrf: csrf } });
    expect(unknown.status).toBe(400);
  });

  test('rotating the secret with no grace (a leaked secret): shown once, the old one stops working at the token endpoint, other sessions end', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const mine = new Browser(t.baseUrl);
    const elsewhere = new Browser(t.baseUrl);
    await signIn(elsewhere, client);
    let page = await signIn(mine, client);
    page = await post(mine, page, 'add_webhook', { url: receiver.url('/rotated'), events: 'client.secret_rotated' });
    const hookSecret = text(page, 'new_webhook_secret')!;

    const rotated = await post(mine, page, 'rotate_secret', { grace: '0' });
    expect(rotated.status).toBe(200);
    const newSecret = text(rotated, 'new_client_secret')!;
    expect(newSecret).toMatch(/^[\w-]{43}$/);
    expect(newSecret).not.toBe(client.client_secret);
    expect(text(rotated, 'new_client_secret_overlap')).toBe('The old secret no longer works.');
    const audited = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { clientId: client.client_id, event: 'client.secret_rotated' } });
    expect(audited).toMatchObject({ actor: `client:${client.client_id}`, address: '127.0.0.1', detail: { client_name: 'Test App', grace: '0', previous_secret_expires_at: expect.any(String) } });

    const event = await receiver.next((h) => h.path === '/rotated');
    expect(verify(event, hookSecret)).toMatchObject({
      type: 'client.secret_rotated', data: { client_id: client.client_id, client_name: 'Test App', previous_secret_expires_at: (audited.detail as Record<string, string>).previous_secret_expires_at },
    });
    expect(event.body).not.toContain(newSecret);
    expect(event.body).not.toContain(client.client_secret);

    // Old secret: 401 invalid_client at the token endpoint; the new one works.
    const code = await new Browser(t.baseUrl).authorize(client, user).then((url) => url.searchParams.get('code')!);
    expectErrorResponse(await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret }), 401, 'invalid_client');
    const ok = await tokenRequest(t, { code, client_id: client.client_id, client_secret: newSecret });
    expect(ok.status).toBe(200);

    // This browser stays signed in; the other session was bound to the old secret and has ended.
    const stillMine = await mine.request('/api/settings.php');
    expect(text(stillMine, 'client_id')).toBe(client.client_id);
    expect(stillMine.body).not.toContain(newSecret);
    expect((await elsewhere.request('/api/settings.php')).body).toContain('id="sign_in"');
    // The old secret no longer signs in here either.
    const fresh = new Browser(t.baseUrl);
    expect((await signIn(fresh, client)).status).toBe(401);
    expect((await signIn(fresh, { ...client, client_secret: newSecret })).status).toBe(200);
  });

  test('rotating with a grace: the old secret works where the client uses OAuth until the time shown, never to manage the client, then ends early with the button', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const browser = new Browser(t.baseUrl);
    let page = await signIn(browser, client);
    expect(page.body).toMatch(/<option value="1d" selected[^>]*>24 hours \(default\)<\/option>/); // CLIENT_SECRET_ROTATION_GRACE unset: 24h
    expect(page.body).not.toContain('id="previous_secret"'); // never rotated

    const before = Date.now();
    page = await post(browser, page, 'rotate_secret', { grace: '1h' });
    const newSecret = text(page, 'new_client_secret')!;
    const until = text(page, 'previous_secret_expires_at')!;
    expect(Date.parse(until) - before).toBeGreaterThanOrEqual(3_600_000);
    expect(Date.parse(until) - Date.now()).toBeLessThanOrEqual(3_601_000);
    expect(unescape(page.body)).toContain(`The old secret keeps working until <time datetime="${until}">${until}</time>`);
    const audited = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { clientId: client.client_id, event: 'client.secret_rotated' } });
    expect(audited.detail).toEqual({ client_name: 'Test App', grace: '1h', previous_secret_expires_at: until });

    // The old secret still works at the token endpoint; so does the new one. Managing the client
    // (settings sign-in, webhooks API) takes the new one only: the old one is refused as a wrong one.
    const code = () => new Browser(t.baseUrl).authorize(client, user).then((url) => url.searchParams.get('code')!);
    expect((await tokenRequest(t, { code: await code(), client_id: client.client_id, client_secret: client.client_secret })).status).toBe(200);
    expect((await tokenRequest(t, { code: await code(), client_id: client.client_id, client_secret: newSecret })).status).toBe(200);
    const refused = await signIn(new Browser(t.baseUrl), client);
    expect(refused.status).toBe(401);
    expect(refused.body).toContain('Unknown client_id or wrong client_secret.');
    expect((await signIn(new Browser(t.baseUrl), { ...client, client_secret: newSecret })).status).toBe(200);
    expectErrorResponse(await webhooksApi(t.baseUrl, client), 401, 'invalid_client');
    expect((await webhooksApi(t.baseUrl, { ...client, client_secret: newSecret })).status).toBe(200);

    // Ended early: the old secret is refused at once, the new one still works; the page says so.
    page = await post(browser, await browser.request('/api/settings.php'), 'end_previous_secret');
    expect(text(page, 'notice')).toBe('The previous client secret no longer works.');
    expect(page.body).toContain('The previous secret stopped working at');
    expect(page.body).not.toContain('id="end_previous_secret"');
    expectErrorResponse(await tokenRequest(t, { code: await code(), client_id: client.client_id, client_secret: client.client_secret }), 401, 'invalid_client');
    expect((await signIn(new Browser(t.baseUrl), client)).status).toBe(401);
    expect((await webhooksApi(t.baseUrl, client)).status).toBe(401);
    expect((await tokenRequest(t, { code: await code(), client_id: client.client_id, client_secret: newSecret })).status).toBe(200);
    const ended = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { clientId: client.client_id, event: 'client.previous_secret_ended' } });
    expect(ended).toMatchObject({ actor: `client:${client.client_id}`, detail: { client_name: 'Test App', was_to_expire_at: until } });

    // Nothing left to end: said plainly, no second row.
    page = await post(browser, await browser.request('/api/settings.php'), 'rotate_secret', { grace: '0' });
    const csrf = /name="_csrf" value="([^"]*)"/.exec(page.body)![1]!;
    const again = await browser.request('/api/settings.php?action=end_previous_secret', { form: { _csrf: csrf } });
    expect((await browser.request(again.location!)).body).toContain('There was no previous client secret still working.');
    expect(await t.app.db.prisma.auditEvent.count({ where: { clientId: client.client_id, event: 'client.previous_secret_ended' } })).toBe(1);
  });

  test('rotating again within a grace: only the secret just replaced overlaps, the older one ends at once', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const browser = new Browser(t.baseUrl);
    const second = text(await post(browser, await signIn(browser, client), 'rotate_secret', { grace: '1h' }), 'new_client_secret')!;
    const third = text(await post(browser, await browser.request('/api/settings.php'), 'rotate_secret', { grace: '1h' }), 'new_client_secret')!;
    const exchange = async (secret: string) => tokenRequest(t, {
      code: (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!, client_id: client.client_id, client_secret: secret,
    });
    expectErrorResponse(await exchange(client.client_secret), 401, 'invalid_client');
    expect((await exchange(second)).status).toBe(200);
    expect((await exchange(third)).status).toBe(200);
  });

  test('a grace that is not a duration: a readable 400, nothing rotated', async () => {
    const client = await registerClient(t);
    const browser = new Browser(t.baseUrl);
    const page = await signIn(browser, client);
    const stored = await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: client.client_id } });
    for (const grace of ['forever', '15', '31d']) {
      const refused = await post(browser, page, 'rotate_secret', { grace });
      expect(refused.status).toBe(400);
      expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
      expect(unescape(text(refused, 'error')!)).toBe(`grace must be a duration such as 0, 30s, 15m, 1h or 7d (at most 30d), got "${grace}"`);
      expect(refused.body).not.toContain('id="new_client_secret"');
    }
    expect(await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: client.client_id } })).toEqual(stored);
    expect(await t.app.db.prisma.auditEvent.count({ where: { clientId: client.client_id, event: 'client.secret_rotated' } })).toBe(0);
    expect((await signIn(new Browser(t.baseUrl), client)).status).toBe(200);
  });
});
