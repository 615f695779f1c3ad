/**
 * POST /api/token.php with grant_type=refresh_token: every code exchange returns a refresh
 * token; each refresh rotates it; reusing a rotated one revokes the grant; it works only for
 * its own client; its lifetime is absolute from the code exchange.
 * @see RFC 6749 §6, RFC 9700 §4.14.2
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { basicAuth, createUser, expectErrorResponse, obtainTokens, postForm, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { deleteRedisKeys } from '../helpers/services.js';
import { startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The absolute lifetime takes ABSOLUTE_TTL seconds to show: its code is exchanged before every
 * other test of this file and its refresh sent half-way whatever runs then, so that the other
 * tests run meanwhile; its test comes last. The refresh leaves the first token about 5 s to live
 * (less what the exchange took); the check comes 1 s after the absolute end and at least 4 s
 * before a sliding one would come.
 */
const ABSOLUTE_TTL = 12;
const absolute = {} as { t: TestApp; creds: { client_id: string; client_secret: string }; start: number; timer: NodeJS.Timeout; rotated: Promise<Awaited<ReturnType<typeof tokenRequest>>> };
beforeAll(async () => {
  const t = await startTestApp({ env: { REFRESH_TOKEN_TTL: String(ABSOLUTE_TTL) } });
  const client = await registerClient(t);
  const user = await createUser(t);
  const creds = { client_id: client.client_id, client_secret: client.client_secret };
  const first = await obtainTokens(t, client, user);
  const start = Date.now(); // after the exchange: the token expires at most ABSOLUTE_TTL s from here
  let timer!: NodeJS.Timeout;
  const rotated = new Promise((resolve) => { timer = setTimeout(resolve, (ABSOLUTE_TTL / 2) * 1000 - (Date.now() - start)); })
    .then(() => tokenRequest(t, { grant_type: 'refresh_token', refresh_token: first.refresh_token, ...creds }));
  rotated.catch(() => {}); // awaited by its test; not an unhandled rejection meanwhile
  Object.assign(absolute, { t, creds, start, timer, rotated });
});
afterAll(async () => {
  clearTimeout(absolute.timer); // its test was left out (jest -t): no refresh after the app is gone
  await absolute.t?.close();
});

describe.each<Mode>(['postgres', 'embedded'])('refresh tokens (%s)', (mode) => {
  let t: TestApp;
  let client: TestClient;
  let other: TestClient;
  let user: TestUser;
  beforeAll(async () => {
    t = await startTestApp({ mode });
    client = await registerClient(t);
    other = await registerClient(t);
    user = await createUser(t);
  });
  afterAll(async () => { await t.close(); });

  const creds = (c: TestClient = client) => ({ client_id: c.client_id, client_secret: c.client_secret });
  const refresh = (refreshToken: string, c: TestClient = client) =>
    tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshToken, ...creds(c) });

  test('a code exchange returns a refresh token; a refresh returns a new access and refresh token', async () => {
    const first = await obtainTokens(t, client, user);
    expect(typeof first.refresh_token).toBe('string');

    const res = await refresh(first.refresh_token);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: first.scope });
    expect(res.body.refresh_token).not.toBe(first.refresh_token);
    expect(res.body.access_token).not.toBe(first.access_token);
    expect((await userinfo(t, `Bearer ${res.body.access_token}`)).body.username).toBe(user.username);

    // The new one rotates again, with HTTP Basic credentials too.
    const again = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: String(res.body.refresh_token) }, { authorization: basicAuth(client) });
    expect(again.status).toBe(200);
    expect(again.body.refresh_token).not.toBe(res.body.refresh_token);
  });

  test('reusing a rotated refresh token: 400 invalid_grant, and every token of the grant dies', async () => {
    const first = await obtainTokens(t, client, user);
    const second = await refresh(first.refresh_token);
    expect(second.status).toBe(200);

    const reuse = await refresh(first.refresh_token);
    expectErrorResponse(reuse, 400, 'invalid_grant');

    expectErrorResponse(await userinfo(t, `Bearer ${second.body.access_token}`), 401, 'invalid_token');
    expectErrorResponse(await userinfo(t, `Bearer ${first.access_token}`), 401, 'invalid_token');
    expectErrorResponse(await refresh(String(second.body.refresh_token)), 400, 'invalid_grant');
  });

  test("another client's refresh token: 400 invalid_grant, and it stays valid for its own client", async () => {
    const { refresh_token: refreshToken } = await obtainTokens(t, client, user);
    expectErrorResponse(await refresh(refreshToken, other), 400, 'invalid_grant');
    expect((await refresh(refreshToken)).status).toBe(200);
  });

  test('an unknown refresh token: 400 invalid_grant (invalid_code stays for codes)', async () => {
    expectErrorResponse(await refresh('not-a-refresh-token'), 400, 'invalid_grant');
  });

  test('a missing refresh_token or missing credentials: 400 invalid_request', async () => {
    expectErrorResponse(await tokenRequest(t, { grant_type: 'refresh_token', ...creds() }), 400, 'invalid_request');
    expectErrorResponse(await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: 'x' }), 400, 'invalid_request');
  });

  test('a wrong client secret: 401 invalid_client, and the refresh token is not used up', async () => {
    const { refresh_token: refreshToken } = await obtainTokens(t, client, user);
    const res = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, client_secret: 'wrong' });
    expectErrorResponse(res, 401, 'invalid_client');
    expect((await refresh(refreshToken)).status).toBe(200);
  });

  test('rotation does not extend the lifetime: the new token expires when the first one does', async () => {
    const first = await obtainTokens(t, client, user);
    const introspect = async (token: string) => (await postForm(t, '/api/introspect.php', { token, ...creds() })).body;
    const before = await introspect(first.refresh_token);
    expect(before.exp).toBe(Number(before.iat) + t.config.refreshTokenTtl);
    await sleep(1100);
    const rotated = await refresh(first.refresh_token);
    const after = await introspect(String(rotated.body.refresh_token));
    expect(after).toMatchObject({ active: true, exp: before.exp });
  });

  test('a refresh token does not end with the login session', async () => {
    const { refresh_token: refreshToken } = await obtainTokens(t, client, user);
    if (mode === 'postgres') await deleteRedisKeys(t.env.REDIS_KEY_PREFIX!); // every session and interaction
    expect((await refresh(refreshToken)).status).toBe(200);
  });
});

describe('a grant outlives the refresh tokens issued under it', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t.close(); });

  test('a new grant expires after its refresh token; an authorization reusing a grant near its end renews it', async () => {
    const client = await registerClient(t);
    const user = await createUser(t);
    const { prisma } = t.app.db;
    const browser = new Browser(t.baseUrl);
    const code = (await browser.authorize(client, user)).searchParams.get('code')!;
    const exchanged = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    expect(exchanged.status).toBe(200);

    const [grant] = await prisma.oidcModel.findMany({ where: { type: 'Grant' } });
    const [refreshToken] = await prisma.oidcModel.findMany({ where: { type: 'RefreshToken' } });
    expect(grant!.expiresAt!.getTime()).toBeGreaterThan(refreshToken!.expiresAt!.getTime());

    // The grant is about to end; the same browser authorizes again (no login, no consent).
    const soon = Math.floor(Date.now() / 1000) + 100;
    await prisma.oidcModel.update({
      where: { type_id: { type: 'Grant', id: grant!.id } },
      data: { expiresAt: new Date(soon * 1000), payload: { ...(grant!.payload as object), exp: soon } },
    });
    const again = await browser.authorize(client, user);
    expect(again.searchParams.get('code')).toBeTruthy();
    const renewed = await prisma.oidcModel.findUniqueOrThrow({ where: { type_id: { type: 'Grant', id: grant!.id } } });
    const expected = Date.now() + (t.config.refreshTokenTtl + t.config.authorizationCodeTtl + 86_400) * 1000;
    expect(Math.abs(renewed.expiresAt!.getTime() - expected)).toBeLessThan(10_000);
    expect(Math.abs((renewed.payload as { exp: number }).exp * 1000 - renewed.expiresAt!.getTime())).toBeLessThan(1000);
  });
});

describe(`the refresh-token lifetime is absolute (REFRESH_TOKEN_TTL=${ABSOLUTE_TTL})`, () => {
  test(`a token rotated half-way still expires ${ABSOLUTE_TTL} s after the code exchange`, async () => {
    const { t, creds, start } = absolute;
    const rotated = await absolute.rotated;
    expect(rotated.status).toBe(200);

    // A sliding lifetime would keep the rotated token until ~1.5 × ABSOLUTE_TTL; the absolute one ends at ABSOLUTE_TTL.
    await sleep((ABSOLUTE_TTL + 1) * 1000 - (Date.now() - start));
    const expired = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: String(rotated.body.refresh_token), ...creds });
    expectErrorResponse(expired, 400, 'invalid_grant');
  }, 60_000);
});
