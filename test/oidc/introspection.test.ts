/**
 * POST /api/introspect.php (RFC 7662): client authentication as at the token endpoint; a
 * client sees only its own tokens; an active token carries active, client_id, username,
 * scope, token_type, exp and iat.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { basicAuth, createUser, expectErrorResponse, obtainTokens, postForm, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

describe.each<Mode>(['postgres', 'embedded'])('POST /api/introspect.php (%s)', (mode) => {
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
  const introspect = (form: Record<string, string>, headers?: Record<string, string>) => postForm(t, '/api/introspect.php', form, headers);

  test('an active access token: active, client_id, username, scope, token_type Bearer, exp, iat; no-store', async () => {
    const tokens = await obtainTokens(t, client, user);
    const now = Math.floor(Date.now() / 1000);
    const res = await introspect({ token: tokens.access_token, ...creds() });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({
      active: true, client_id: client.client_id, username: user.username, scope: tokens.scope, token_type: 'Bearer',
    });
    expect(Math.abs(Number(res.body.iat) - now)).toBeLessThanOrEqual(5);
    expect(res.body.exp).toBe(Number(res.body.iat) + 3600);
  });

  test('an active refresh token (HTTP Basic): the same fields, token_type refresh_token', async () => {
    const tokens = await obtainTokens(t, client, user);
    const res = await introspect({ token: tokens.refresh_token, token_type_hint: 'refresh_token' }, { authorization: basicAuth(client) });
    expect(res.body).toMatchObject({
      active: true, client_id: client.client_id, username: user.username, scope: tokens.scope, token_type: 'refresh_token',
    });
    expect(res.body.exp).toBe(Number(res.body.iat) + t.config.refreshTokenTtl);
  });

  test("another client's token introspects as {active: false}, and stays valid", async () => {
    const tokens = await obtainTokens(t, client, user);
    expect((await introspect({ token: tokens.access_token, ...creds(other) })).body).toEqual({ active: false });
    expect((await introspect({ token: tokens.refresh_token, ...creds(other) })).body).toEqual({ active: false });
    expect((await introspect({ token: tokens.access_token, ...creds() })).body.active).toBe(true);
  });

  test('unknown, revoked and rotated-away tokens are {active: false}', async () => {
    expect((await introspect({ token: 'no-such-token', ...creds() })).body).toEqual({ active: false });
    const tokens = await obtainTokens(t, client, user);
    const rotated = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...creds() });
    expect((await introspect({ token: tokens.refresh_token, ...creds() })).body).toEqual({ active: false });
    expect((await introspect({ token: String(rotated.body.refresh_token), ...creds() })).body.active).toBe(true);
    await postForm(t, '/api/revoke.php', { token: String(rotated.body.access_token), ...creds() });
    expect((await introspect({ token: String(rotated.body.access_token), ...creds() })).body).toEqual({ active: false });
  });

  test('no client credentials: 400 invalid_request; wrong: 401 invalid_client; missing token: 400 invalid_request', async () => {
    expectErrorResponse(await introspect({ token: 'x' }), 400, 'invalid_request');
    expectErrorResponse(await introspect({ token: 'x', client_id: client.client_id, client_secret: 'wrong' }), 401, 'invalid_client');
    expectErrorResponse(await introspect({ token: 'x' }, { authorization: basicAuth({ ...client, client_secret: 'wrong' }) }), 401, 'invalid_client');
    expectErrorResponse(await introspect({ ...creds() }), 400, 'invalid_request');
  });
});
