/**
 * POST /api/revoke.php (RFC 7009): client authentication as at the token endpoint; a client
 * revokes only its own tokens; revoking either token of a grant ends the whole grant.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { basicAuth, createUser, expectErrorResponse, obtainTokens, postForm, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('POST /api/revoke.php', () => {
  let t: TestApp;
  let client: TestClient;
  let other: TestClient;
  let user: TestUser;
  beforeAll(async () => {
    t = await startTestApp();
    client = await registerClient(t);
    other = await registerClient(t);
    user = await createUser(t);
  });
  afterAll(async () => { await t.close(); });

  const creds = (c: TestClient = client) => ({ client_id: c.client_id, client_secret: c.client_secret });
  const revoke = (form: Record<string, string>, headers?: Record<string, string>) => postForm(t, '/api/revoke.php', form, headers);
  const refresh = (refreshToken: string) => tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshToken, ...creds() });

  test('revoking a refresh token: 200, it no longer refreshes, and its access token dies', async () => {
    const tokens = await obtainTokens(t, client, user);
    const res = await revoke({ token: tokens.refresh_token, token_type_hint: 'refresh_token', ...creds() });
    expect(res.status).toBe(200);
    expectErrorResponse(await refresh(tokens.refresh_token), 400, 'invalid_grant');
    expectErrorResponse(await userinfo(t, `Bearer ${tokens.access_token}`), 401, 'invalid_token');
  });

  test('revoking an access token (HTTP Basic): it dies at userinfo, and so does its refresh token', async () => {
    const tokens = await obtainTokens(t, client, user);
    const res = await revoke({ token: tokens.access_token }, { authorization: basicAuth(client) });
    expect(res.status).toBe(200);
    expectErrorResponse(await userinfo(t, `Bearer ${tokens.access_token}`), 401, 'invalid_token');
    expectErrorResponse(await refresh(tokens.refresh_token), 400, 'invalid_grant');
  });

  test("another client's token: refused with 400 invalid_request, and it stays valid", async () => {
    const tokens = await obtainTokens(t, client, user);
    expectErrorResponse(await revoke({ token: tokens.access_token, ...creds(other) }), 400, 'invalid_request');
    expectErrorResponse(await revoke({ token: tokens.refresh_token, ...creds(other) }), 400, 'invalid_request');
    expect((await userinfo(t, `Bearer ${tokens.access_token}`)).status).toBe(200);
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
  });

  test('an unknown or already revoked token: 200 (RFC 7009 §2.2)', async () => {
    expect((await revoke({ token: 'no-such-token', ...creds() })).status).toBe(200);
    const tokens = await obtainTokens(t, client, user);
    expect((await revoke({ token: tokens.refresh_token, ...creds() })).status).toBe(200);
    expect((await revoke({ token: tokens.refresh_token, ...creds() })).status).toBe(200);
  });

  test('no client credentials: 400 invalid_request; missing token: 400 invalid_request', async () => {
    expectErrorResponse(await revoke({ token: 'x' }), 400, 'invalid_request');
    expectErrorResponse(await revoke({ ...creds() }), 400, 'invalid_request');
  });

  test('wrong or unknown client credentials: 401 invalid_client, and the token stays valid', async () => {
    const tokens = await obtainTokens(t, client, user);
    expectErrorResponse(await revoke({ token: tokens.access_token, client_id: client.client_id, client_secret: 'wrong' }), 401, 'invalid_client');
    expectErrorResponse(await revoke({ token: tokens.access_token }, { authorization: basicAuth({ ...client, client_secret: 'wrong' }) }), 401, 'invalid_client');
    expectErrorResponse(await revoke({ token: tokens.access_token, client_id: 'unknown-client-id-xxxx', client_secret: 'x' }), 401, 'invalid_client');
    expect((await userinfo(t, `Bearer ${tokens.access_token}`)).status).toBe(200);
  });

  test('a browser (Accept: text/html) still gets the JSON error body', async () => {
    const res = await revoke({ token: 'x' }, { accept: 'text/html' });
    expectErrorResponse(res, 400, 'invalid_request');
  });
});
