/**
 * POST /api/token.php: the spec's three fields are the whole request; every error row of the
 * spec's table with its status and the JSON body.
 * @see RFC 6749 §4.1.3, §5.2
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { obtainCode } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { createUser, expectErrorResponse, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const basic = (c: TestClient) => `Basic ${Buffer.from(`${encodeURIComponent(c.client_id)}:${encodeURIComponent(c.client_secret)}`).toString('base64')}`;

describe('POST /api/token.php', () => {
  let t: TestApp;
  let client: TestClient;
  let other: TestClient;
  let user: TestUser;
  /** A code left to expire while the other tests run (it lives 2 s), and when it was issued. */
  let expiring: { code: string; issuedAt: number };
  beforeAll(async () => {
    t = await startTestApp({ env: { AUTHORIZATION_CODE_TTL: '2' } });
    client = await registerClient(t);
    other = await registerClient(t);
    user = await createUser(t);
    expiring = { code: await obtainCode(t.baseUrl, client, user), issuedAt: Date.now() };
  });
  afterAll(async () => { await t.close(); });

  const creds = (c: TestClient = client) => ({ client_id: c.client_id, client_secret: c.client_secret });

  test('code, client_id and client_secret are enough: 200 Bearer token, no-store', async () => {
    const code = await obtainCode(t.baseUrl, client, user);
    const res = await tokenRequest(t, { code, ...creds() });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('pragma')).toBe('no-cache'); // RFC 6749 §5.1
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
  });

  test('an error answer is not cached either: no-store and Pragma no-cache (RFC 6749 §5.1)', async () => {
    for (const form of [{ code: 'not-a-code', ...creds() }, { ...creds() }]) {
      const res = await tokenRequest(t, form);
      expect(res.status).toBe(400);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('pragma')).toBe('no-cache');
    }
  });

  test('a standard request (grant_type, redirect_uri, HTTP Basic) works too', async () => {
    const code = await obtainCode(t.baseUrl, client, user);
    const res = await tokenRequest(t, { grant_type: 'authorization_code', code, redirect_uri: client.redirect_uri }, { authorization: basic(client) });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('Bearer');
  });

  test('PKCE: the right verifier redeems, a wrong one is invalid_code', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const pkce = { code_challenge: challenge, code_challenge_method: 'S256' };
    const good = await obtainCode(t.baseUrl, client, user, pkce);
    expect((await tokenRequest(t, { code: good, code_verifier: verifier, ...creds() })).status).toBe(200);
    const bad = await obtainCode(t.baseUrl, client, user, pkce);
    const res = await tokenRequest(t, { code: bad, code_verifier: randomBytes(32).toString('base64url'), ...creds() });
    expect(res).toMatchObject({ status: 400, body: { error: 'invalid_code' } });
    const missing = await obtainCode(t.baseUrl, client, user, pkce);
    expect(await tokenRequest(t, { code: missing, ...creds() })).toMatchObject({ status: 400, body: { error: 'invalid_code' } });
  });

  describe.each([
    ['code', { client_id: 'x', client_secret: 'y' }],
    ['client_id', { code: 'x', client_secret: 'y' }],
    ['client_secret', { code: 'x', client_id: 'x' }],
    ['everything', {}],
  ])('missing %s', (_name, form) => {
    test('400 invalid_request', async () => {
      expectErrorResponse(await tokenRequest(t, form), 400, 'invalid_request');
    });
  });

  test('unknown client: 401 invalid_client', async () => {
    const res = await tokenRequest(t, { code: 'x', client_id: 'no-such-client', client_secret: 'nope' });
    expect(res).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
  });

  test('wrong secret: 401 invalid_client, and the code stays usable', async () => {
    const code = await obtainCode(t.baseUrl, client, user);
    const res = await tokenRequest(t, { code, client_id: client.client_id, client_secret: `${client.client_secret}x` });
    expect(res).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect((await tokenRequest(t, { code, ...creds() })).status).toBe(200);
  });

  test('wrong secret over HTTP Basic: 401 invalid_client', async () => {
    const res = await tokenRequest(t, { code: 'x' }, { authorization: basic({ ...client, client_secret: 'wrong' }) });
    expect(res).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
  });

  test('unknown code: 400 invalid_code', async () => {
    expect(await tokenRequest(t, { code: 'not-a-code', ...creds() })).toMatchObject({ status: 400, body: { error: 'invalid_code' } });
  });

  test("another client's code: 400 invalid_code", async () => {
    const code = await obtainCode(t.baseUrl, client, user);
    expect(await tokenRequest(t, { code, ...creds(other) })).toMatchObject({ status: 400, body: { error: 'invalid_code' } });
  });

  test('expired code: 400 invalid_code', async () => {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiring.issuedAt + 2500 - Date.now())));
    expect(await tokenRequest(t, { code: expiring.code, ...creds() })).toMatchObject({ status: 400, body: { error: 'invalid_code' } });
  });

  test('a used code: 400 invalid_code, and the token it gave is revoked', async () => {
    const code = await obtainCode(t.baseUrl, client, user);
    const first = await tokenRequest(t, { code, ...creds() });
    expect((await userinfo(t, `Bearer ${first.body.access_token}`)).status).toBe(200);
    expect(await tokenRequest(t, { code, ...creds() })).toMatchObject({ status: 400, body: { error: 'invalid_code' } });
    expect(await userinfo(t, `Bearer ${first.body.access_token}`)).toMatchObject({ status: 401, body: { error: 'invalid_token' } });
  });

  test('a redirect_uri other than the code\'s: 400 invalid_code', async () => {
    const code = await obtainCode(t.baseUrl, client, user);
    const res = await tokenRequest(t, { code, redirect_uri: 'http://localhost:9999/other', ...creds() });
    expect(res).toMatchObject({ status: 400, body: { error: 'invalid_code' } });
  });

  test('an unsupported grant_type keeps its standard error', async () => {
    expect(await tokenRequest(t, { grant_type: 'password', ...creds() })).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
  });
});
