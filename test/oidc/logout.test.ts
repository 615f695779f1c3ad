/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0) at /api/logout.php and
 * back-channel logout (Back-Channel Logout 1.0): the page asks and ends nothing; confirming ends
 * the session, sends the user back with `state`, tells the applications of the session by a
 * logout token that verifies against the JWKS (again after a failed delivery), and ends the
 * grants without offline_access. Bad inputs get a readable page.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { Browser } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { createUser, registerClient, registerDynamicClient, tokenRequest } from '../helpers/fixtures.js';
import { pageText, postSettingsForm, signInOnSettingsPage } from '../helpers/settings-page.js';
import { postApplicationsForm } from '../helpers/applications-page.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Hit, Receiver } from '../helpers/receiver.js';
import { startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

const ALLOW_LOCAL = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '100' };

interface Tokens { id_token: string; refresh_token: string; access_token: string }

async function signIn(t: TestApp, browser: Browser, client: TestClient, user: TestUser, params: Record<string, string> = {}): Promise<Tokens> {
  const redirect = await browser.authorize(client, user, params);
  const code = redirect.searchParams.get('code');
  expect(code).toBeTruthy();
  const res = await tokenRequest(t, { grant_type: 'authorization_code', code: code!, redirect_uri: client.redirect_uri, client_id: client.client_id, client_secret: client.client_secret });
  expect(res.status).toBe(200);
  return res.body as unknown as Tokens;
}

const refresh = (t: TestApp, client: TestClient, refreshToken: string) =>
  tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, client_secret: client.client_secret });

/** The logout token of a hit (a form body `logout_token=…`). */
const logoutTokenOf = (hit: Hit) => new URLSearchParams(hit.body).get('logout_token') ?? '';

describe.each<Mode>(['postgres', 'embedded'])('logout (%s)', (mode) => {
  let t: TestApp;
  let receiver: Receiver;
  let user: TestUser;
  let a: TestClient;
  let b: TestClient;

  beforeAll(async () => {
    receiver = await startReceiver();
    t = await startTestApp({ mode, env: ALLOW_LOCAL });
    user = await createUser(t);
    const registered = await registerDynamicClient(t, {
      client_name: 'App A', redirect_uris: ['http://localhost:9999/a/callback'], grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_post',
      post_logout_redirect_uris: ['http://localhost:9999/a/signed-out'], backchannel_logout_uri: receiver.url('/a/backchannel'),
    });
    expect(registered).toMatchObject({ post_logout_redirect_uris: ['http://localhost:9999/a/signed-out'], backchannel_logout_uri: receiver.url('/a/backchannel') });
    a = { client_id: registered.client_id, client_secret: registered.client_secret!, redirect_uri: 'http://localhost:9999/a/callback' };
    // B in the spec's own shape, with its logout fields.
    const res = await fetch(`${t.baseUrl}/api/register.php`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'App B', redirect_uri: 'http://localhost:9999/b/callback', post_logout_redirect_uri: 'http://localhost:9999/b/bye', backchannel_logout_uri: receiver.url('/b/backchannel') }),
    });
    const body = await res.json() as Record<string, string>;
    expect(res.status).toBe(201);
    expect(body).toMatchObject({ post_logout_redirect_uri: 'http://localhost:9999/b/bye', backchannel_logout_uri: receiver.url('/b/backchannel') });
    b = { client_id: body.client_id!, client_secret: body.client_secret!, redirect_uri: 'http://localhost:9999/b/callback' };
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  test('discovery lists the end-session endpoint and back-channel logout', async () => {
    const discovery = await (await fetch(`${t.baseUrl}/.well-known/openid-configuration`)).json() as Record<string, unknown>;
    expect(discovery).toMatchObject({
      end_session_endpoint: `${t.baseUrl}/api/logout.php`,
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
    });
    expect(discovery.scopes_supported).not.toContain('offline_access');
  });

  test('an ID token carries sid for a client that registered no logout URI too', async () => {
    const plain = await registerClient(t, 'http://localhost:9999/plain/callback', 'Plain');
    const tokens = await signIn(t, new Browser(t.baseUrl), plain, user);
    expect(decodeJwt(tokens.id_token).sid).toEqual(expect.any(String));
  });

  test('signing out of A with id_token_hint: the page ends nothing; confirming ends the session, tells A and B, ends their grants', async () => {
    const browser = new Browser(t.baseUrl);
    const tokensA = await signIn(t, browser, a, user);
    const tokensB = await signIn(t, browser, b, user);
    const sidA = decodeJwt(tokensA.id_token).sid;
    const sidB = decodeJwt(tokensB.id_token).sid;
    expect(sidA).toEqual(expect.any(String)); // every ID token carries sid
    expect(sidB).toEqual(expect.any(String));

    const query = new URLSearchParams({ id_token_hint: tokensA.id_token, post_logout_redirect_uri: 'http://localhost:9999/a/signed-out', state: 'st-1' });
    const page = await browser.follow(`/api/logout.php?${query}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('App A');
    expect(page.body).toContain(`action="${t.baseUrl}/api/logout.php/confirm"`);
    expect(page.body).toMatch(/name="xsrf" value="[^"]+"/);
    // Opening the page ended nothing: B still gets a code without a sign-in.
    const still = await browser.authorize(b, undefined, { prompt: 'none' });
    expect(still.searchParams.get('code')).toBeTruthy();

    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)![1]!;
    const confirmed = await browser.request('/api/logout.php/confirm', { form: { xsrf, logout: 'yes' } });
    expect(confirmed.status).toBe(303);
    const back = new URL(confirmed.location!);
    expect(`${back.origin}${back.pathname}`).toBe('http://localhost:9999/a/signed-out');
    expect(back.searchParams.get('state')).toBe('st-1');

    // B's prompt=none now gets login_required.
    const none = await browser.authorize(b, undefined, { prompt: 'none' });
    expect(none.searchParams.get('error')).toBe('login_required');

    // Both applications are told, with a token that verifies against the JWKS.
    const jwks = createRemoteJWKSet(new URL(`${t.baseUrl}/api/jwks.php`));
    for (const [client, sid, path] of [[a, sidA, '/a/backchannel'], [b, sidB, '/b/backchannel']] as const) {
      const hit = await receiver.next((h) => h.path === path && decodeJwt(logoutTokenOf(h)).sid === sid);
      expect(hit.method).toBe('POST');
      expect(hit.headers['content-type']).toBe('application/x-www-form-urlencoded');
      const { payload, protectedHeader } = await jwtVerify(logoutTokenOf(hit), jwks, { issuer: t.baseUrl, audience: client.client_id });
      expect(protectedHeader.typ).toBe('logout+jwt');
      expect(payload).toMatchObject({ sub: expect.any(String), sid, events: { 'http://schemas.openid.net/event/backchannel-logout': {} }, jti: expect.any(String), iat: expect.any(Number) });
      expect(payload.nonce).toBeUndefined(); // §2.4: a logout token never carries a nonce
    }

    // Their refresh tokens (no offline_access) ended with the session.
    for (const [client, tokens] of [[a, tokensA], [b, tokensB]] as const) {
      const res = await refresh(t, client, tokens.refresh_token);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_grant');
    }
  });

  test('a grant with offline_access outlives the session; one without does not', async () => {
    const browser = new Browser(t.baseUrl);
    const offline = await signIn(t, browser, a, user, { scope: 'openid offline_access', prompt: 'consent' });
    const online = await signIn(t, browser, b, user, { scope: 'openid' });
    const page = await browser.follow(`/api/logout.php?${new URLSearchParams({ client_id: b.client_id })}`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)![1]!;
    const confirmed = await browser.request('/api/logout.php/confirm', { form: { xsrf, logout: 'yes' } });
    expect(confirmed.status).toBe(303);
    // No post_logout_redirect_uri: our own "signed out" page.
    expect(confirmed.location).toBe(`${t.baseUrl}/api/logout.php/success`);
    const done = await browser.request(confirmed.location!);
    expect(done.status).toBe(200);
    expect(done.body).toContain('Signed out');

    const kept = await refresh(t, a, offline.refresh_token);
    expect(kept.status).toBe(200);
    const ended = await refresh(t, b, online.refresh_token);
    expect(ended.status).toBe(400);
    expect(ended.body.error).toBe('invalid_grant');
  });

  test('a receiver that answers 500 gets the logout token again', async () => {
    const browser = new Browser(t.baseUrl);
    const tokens = await signIn(t, browser, a, user);
    const sid = decodeJwt(tokens.id_token).sid;
    const failed = new Set<string>();
    receiver.respond = (hit) => {
      if (hit.path !== '/a/backchannel' || decodeJwt(logoutTokenOf(hit)).sid !== sid || failed.size > 0) return 200;
      failed.add(hit.body);
      return 500;
    };
    try {
      const page = await browser.follow(`/api/logout.php?${new URLSearchParams({ id_token_hint: tokens.id_token })}`);
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)![1]!;
      expect((await browser.request('/api/logout.php/confirm', { form: { xsrf, logout: 'yes' } })).status).toBe(303);
      const mine = (h: Hit) => h.path === '/a/backchannel' && decodeJwt(logoutTokenOf(h)).sid === sid;
      await receiver.next((h) => mine(h) && receiver.hits.filter(mine).length >= 2);
      const [first, second] = receiver.hits.filter(mine);
      // Signed afresh: a new jti, and both verify.
      const jwks = createRemoteJWKSet(new URL(`${t.baseUrl}/api/jwks.php`));
      const one = await jwtVerify(logoutTokenOf(first!), jwks, { issuer: t.baseUrl, audience: a.client_id });
      const two = await jwtVerify(logoutTokenOf(second!), jwks, { issuer: t.baseUrl, audience: a.client_id });
      expect(two.payload.jti).not.toBe(one.payload.jti);
      // The outbox records the failed attempt and the delivery.
      let row = await t.app.db.prisma.backchannelLogout.findFirstOrThrow({ where: { clientId: a.client_id, sid: String(sid) } });
      while (row.status === 'pending') {
        await new Promise((resolve) => setTimeout(resolve, 20));
        row = await t.app.db.prisma.backchannelLogout.findFirstOrThrow({ where: { id: row.id } });
      }
      expect(row).toMatchObject({ status: 'delivered', attempts: 2, lastStatusCode: 200 });
    } finally {
      receiver.respond = () => 200;
    }
  });

  test('"Stay signed in" signs out of the asking application only', async () => {
    const browser = new Browser(t.baseUrl);
    const tokensA = await signIn(t, browser, a, user);
    const tokensB = await signIn(t, browser, b, user);
    const page = await browser.follow(`/api/logout.php?${new URLSearchParams({ id_token_hint: tokensA.id_token, post_logout_redirect_uri: 'http://localhost:9999/a/signed-out' })}`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)![1]!;
    const answered = await browser.request('/api/logout.php/confirm', { form: { xsrf } });
    expect(answered.status).toBe(303);
    expect(answered.location).toBe('http://localhost:9999/a/signed-out');
    // Still signed in for B, whose grant lives; A's grant (no offline_access) ended, and A was told.
    expect((await browser.authorize(b, undefined, { prompt: 'none' })).searchParams.get('code')).toBeTruthy();
    expect((await refresh(t, b, tokensB.refresh_token)).status).toBe(200);
    expect((await refresh(t, a, tokensA.refresh_token)).body.error).toBe('invalid_grant');
    const sidA = decodeJwt(tokensA.id_token).sid;
    await receiver.next((h) => h.path === '/a/backchannel' && decodeJwt(logoutTokenOf(h)).sid === sidA);
  });

  test('a silent authorization the session recorded already writes no record again; the logout still tells the application', async () => {
    const browser = new Browser(t.baseUrl);
    const tokens = await signIn(t, browser, a, user);
    const sid = String(decodeJwt(tokens.id_token).sid);
    // xmin changes with every write of a row: the same xmin is the same row version, not written since.
    const record = async () => (await t.app.db.prisma.$queryRaw<{ xmin: string; expires_ms: number }[]>`
      SELECT xmin::text AS xmin, (extract(epoch from expires_at) * 1000)::float8 AS expires_ms
      FROM oidc_models WHERE type = 'SessionClient' AND payload->>'clientId' = ${a.client_id} AND payload->>'sid' = ${sid}`)[0];
    const written = await record();
    expect(written).toBeDefined();
    for (let i = 0; i < 2; i += 1) {
      expect((await browser.authorize(a, undefined, { prompt: 'none' })).searchParams.get('code')).toBeTruthy();
      expect(await record()).toEqual(written);
    }
    // A record that would no longer outlive the session is written again, to outlive it.
    await t.app.db.prisma.$executeRaw`UPDATE oidc_models SET expires_at = now() + interval '1 hour' WHERE type = 'SessionClient' AND payload->>'sid' = ${sid}`;
    const shortened = await record();
    expect((await browser.authorize(a, undefined, { prompt: 'none' })).searchParams.get('code')).toBeTruthy();
    const renewed = await record();
    expect(renewed!.xmin).not.toBe(shortened!.xmin);
    expect(renewed!.expires_ms).toBeGreaterThanOrEqual(written!.expires_ms);

    const page = await browser.follow(`/api/logout.php?${new URLSearchParams({ id_token_hint: tokens.id_token })}`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)![1]!;
    expect((await browser.request('/api/logout.php/confirm', { form: { xsrf, logout: 'yes' } })).status).toBe(303);
    await receiver.next((h) => h.path === '/a/backchannel' && decodeJwt(logoutTokenOf(h)).sid === sid);
    expect(await record()).toBeUndefined();
  });

  test('signing out on the applications page ends the session the same way: the applications are told, grants without offline_access end', async () => {
    const browser = new Browser(t.baseUrl);
    const tokensA = await signIn(t, browser, a, user);
    const sid = decodeJwt(tokensA.id_token).sid;
    expect((await browser.request('/api/applications.php')).body).toContain('App A'); // signed in there through the login session
    expect((await postApplicationsForm(browser, 'sign_out')).status).toBe(303);
    expect((await browser.authorize(b, undefined, { prompt: 'none' })).searchParams.get('error')).toBe('login_required');
    await receiver.next((h) => h.path === '/a/backchannel' && decodeJwt(logoutTokenOf(h)).sid === sid);
    expect((await refresh(t, a, tokensA.refresh_token)).body.error).toBe('invalid_grant');
    const audit = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { event: 'session.ended', detail: { path: ['reason'], equals: 'applications_page' } } });
    expect(audit.detail).toMatchObject({ clients: [a.client_id], backchannel_logout: [a.client_id] });
  });

  test('the settings page changes the logout URIs, checked as at registration; the logout endpoint takes them at once', async () => {
    const res = await fetch(`${t.baseUrl}/api/register.php`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'App C', redirect_uri: 'http://localhost:9999/c/callback' }),
    });
    const c = await res.json() as { client_id: string; client_secret: string };
    const browser = new Browser(t.baseUrl);
    let page = await signInOnSettingsPage(browser, c);
    const asks = (uri: string) => new Browser(t.baseUrl).request(`/api/logout.php?${new URLSearchParams({ client_id: c.client_id, post_logout_redirect_uri: uri })}`);
    expect((await asks('http://localhost:9999/c/bye')).status).toBe(400);

    const bad = await postSettingsForm(browser, page, 'update_client', {
      client_name: 'App C', redirect_uri: 'http://localhost:9999/c/callback', post_logout_redirect_uri: 'http://evil.example/bye', backchannel_logout_uri: '',
    });
    expect(bad.status).toBe(400);
    expect(pageText(bad, 'error')).toMatch(/post_logout_redirect_uri.*https/);
    expect(bad.body).toContain('value="http://evil.example/bye"');
    const badBackchannel = await postSettingsForm(browser, page, 'update_client', {
      client_name: 'App C', redirect_uri: 'http://localhost:9999/c/callback', post_logout_redirect_uri: '', backchannel_logout_uri: 'ftp://files.example/',
    });
    expect(pageText(badBackchannel, 'error')).toMatch(/backchannel_logout_uri/);

    page = await postSettingsForm(browser, page, 'update_client', {
      client_name: 'App C', redirect_uri: 'http://localhost:9999/c/callback', post_logout_redirect_uri: 'http://localhost:9999/c/bye', backchannel_logout_uri: receiver.url('/c/logout'),
    });
    expect(page.status).toBe(200);
    expect(page.body).toContain('value="http://localhost:9999/c/bye"');
    expect((await asks('http://localhost:9999/c/bye')).status).toBe(200);
    const stored = await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: c.client_id } });
    expect(stored.metadata).toEqual({ post_logout_redirect_uris: ['http://localhost:9999/c/bye'], backchannel_logout_uri: receiver.url('/c/logout') });

    // Empty fields remove them.
    page = await postSettingsForm(browser, page, 'update_client', { client_name: 'App C', redirect_uri: 'http://localhost:9999/c/callback', post_logout_redirect_uri: '', backchannel_logout_uri: '' });
    expect(page.status).toBe(200);
    expect((await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: c.client_id } })).metadata).toEqual({});
    expect((await asks('http://localhost:9999/c/bye')).status).toBe(400);
  });

  describe('bad inputs get a readable page, never a 5xx', () => {
    const isPage = (res: { status: number; headers: Headers; body: string }, status: number) => {
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    };

    test('an id_token_hint that is not a JWT, or not ours', async () => {
      const browser = new Browser(t.baseUrl);
      isPage(await browser.request('/api/logout.php?id_token_hint=not-a-jwt'), 400);
      // Its audience names no client: invalid_client, as an unknown client_id is.
      const foreign = 'eyJhbGciOiJIUzI1NiJ9.eyJhdWQiOiJ4In0.c2ln';
      isPage(await browser.request(`/api/logout.php?id_token_hint=${foreign}`), 401);
      // Ours in form, but not signed by us.
      const [header, payload] = (await signIn(t, new Browser(t.baseUrl), a, user)).id_token.split('.');
      isPage(await browser.request(`/api/logout.php?id_token_hint=${header}.${payload}.${'A'.repeat(342)}`), 400);
    });

    test('a post_logout_redirect_uri the client did not register (no prefix, no other port)', async () => {
      const browser = new Browser(t.baseUrl);
      for (const uri of ['http://localhost:9999/a/signed-out/more', 'http://localhost:9998/a/signed-out', 'https://evil.example/']) {
        const res = await browser.request(`/api/logout.php?${new URLSearchParams({ client_id: a.client_id, post_logout_redirect_uri: uri })}`);
        isPage(res, 400);
        expect(res.body).toContain('post_logout_redirect_uri');
      }
    });

    test('an unknown client_id, a client_id that does not match the hint', async () => {
      const browser = new Browser(t.baseUrl);
      isPage(await browser.request('/api/logout.php?client_id=nobody'), 401);
      const { id_token: hint } = await signIn(t, new Browser(t.baseUrl), a, user);
      const mismatch = await browser.request(`/api/logout.php?${new URLSearchParams({ id_token_hint: hint, client_id: b.client_id })}`);
      isPage(mismatch, 400);
      expect(mismatch.body).toContain('client_id does not match');
    });

    test('a confirmation without the page\'s anti-forgery token ends nothing', async () => {
      const browser = new Browser(t.baseUrl);
      await signIn(t, browser, b, user);
      isPage(await browser.request('/api/logout.php/confirm', { form: { logout: 'yes' } }), 400);
      isPage(await browser.request('/api/logout.php/confirm', { form: { logout: 'yes', xsrf: 'forged' } }), 400);
      expect((await browser.authorize(b, undefined, { prompt: 'none' })).searchParams.get('code')).toBeTruthy();
    });

    test('the provider\'s own /session/end paths are not served', async () => {
      const browser = new Browser(t.baseUrl);
      for (const path of ['/session/end', '/session/end/confirm', '/session/end/success']) {
        expect((await browser.request(path, path.endsWith('confirm') ? { form: { logout: 'yes' } } : {})).status).toBe(404);
      }
    });
  });
});

describe('a backchannel_logout_uri follows the webhook guard (WEBHOOK_ALLOW_PRIVATE_NETWORKS off)', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    t = await startTestApp({ env: { WEBHOOK_RETRY_BASE_MS: '100' } });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  test('a private address is refused at registration, in both dialects', async () => {
    const rfc = await fetch(`${t.baseUrl}/api/register.php`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['http://localhost:9999/cb'], backchannel_logout_uri: receiver.url('/x') }),
    });
    expect(rfc.status).toBe(400);
    expect(await rfc.json()).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringMatching(/^backchannel_logout_uri: /) });
    const spec = await fetch(`${t.baseUrl}/api/register.php`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'X', redirect_uri: 'http://localhost:9999/cb', backchannel_logout_uri: 'http://10.1.2.3/logout' }),
    });
    expect(spec.status).toBe(400);
    expect(await spec.json()).toMatchObject({ error: 'invalid_request', error_description: expect.stringMatching(/backchannel_logout_uri/) });
  });

  test('a name that resolves to loopback is never contacted: the message waits, with the guard\'s words', async () => {
    // Registered by name (a name is checked when it is used, as a webhook URL is).
    const port = new URL(receiver.origin).port;
    const registered = await registerDynamicClient(t, {
      redirect_uris: ['http://localhost:9999/cb'], token_endpoint_auth_method: 'client_secret_post', grant_types: ['authorization_code', 'refresh_token'],
      backchannel_logout_uri: `http://localhost:${port}/guarded`,
    });
    const client = { client_id: registered.client_id, client_secret: registered.client_secret!, redirect_uri: 'http://localhost:9999/cb' };
    const user = await createUser(t);
    const browser = new Browser(t.baseUrl);
    await signIn(t, browser, client, user);
    const page = await browser.follow(`/api/logout.php?${new URLSearchParams({ client_id: client.client_id })}`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)![1]!;
    expect((await browser.request('/api/logout.php/confirm', { form: { xsrf, logout: 'yes' } })).status).toBe(303);
    let row = await t.app.db.prisma.backchannelLogout.findFirst({ where: { clientId: client.client_id } });
    while (!row || row.attempts === 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      row = await t.app.db.prisma.backchannelLogout.findFirst({ where: { clientId: client.client_id } });
    }
    expect(row).toMatchObject({ status: 'pending', lastStatusCode: null, lastError: expect.stringMatching(/localhost resolves to .*loopback/) });
    expect(receiver.hits.filter((h) => h.path === '/guarded')).toEqual([]);
  });
});
