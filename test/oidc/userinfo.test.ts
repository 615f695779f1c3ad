/**
 * GET /api/userinfo.php: the profile for a valid token; 401 invalid_token with a Bearer
 * challenge for a missing, invalid or expired one.
 * @see RFC 6750 §3
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { obtainCode } from '../helpers/browser.js';
import { createUser, expectErrorResponse, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('GET /api/userinfo.php', () => {
  let t: TestApp;
  let accessToken: string;
  let issuedAt: number;
  beforeAll(async () => {
    t = await startTestApp({ env: { ACCESS_TOKEN_TTL: '2' } });
    const client = await registerClient(t);
    const user = await createUser(t, { username: 'bob', email: 'bob@example.com', fullName: 'Bob Builder' });
    const code = await obtainCode(t.baseUrl, client, user);
    const token = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    expect(token.body.expires_in).toBe(2);
    accessToken = String(token.body.access_token);
    issuedAt = Date.now();
  });
  afterAll(async () => { await t.close(); });

  test('a valid token reads username, email and full_name', async () => {
    const res = await userinfo(t, `Bearer ${accessToken}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ username: 'bob', email: 'bob@example.com', full_name: 'Bob Builder' });
  });

  test('POST with the header or a form body access_token (RFC 6750 §2.2); the query, or two ways at once, refused', async () => {
    const post = (init: { authorization?: string; form?: Record<string, string> }, query = '') => fetch(`${t.baseUrl}/api/userinfo.php${query}`, {
      method: 'POST',
      headers: { ...(init.authorization ? { authorization: init.authorization } : {}), ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: init.form && new URLSearchParams(init.form).toString(),
    });
    expect((await post({ authorization: `Bearer ${accessToken}` })).status).toBe(200);
    const inBody = await post({ form: { access_token: accessToken } });
    expect(inBody.status).toBe(200);
    expect(await inBody.json()).toMatchObject({ username: 'bob' });
    const inQuery = await fetch(`${t.baseUrl}/api/userinfo.php?access_token=${encodeURIComponent(accessToken)}`);
    expect([inQuery.status, (await inQuery.json() as Record<string, unknown>).error]).toEqual([401, 'invalid_token']);
    const twice = await post({ authorization: `Bearer ${accessToken}`, form: { access_token: accessToken } });
    expect([twice.status, (await twice.json() as Record<string, unknown>).error]).toEqual([401, 'invalid_token']);
  });

  describe.each([
    ['missing', undefined],
    ['unknown', 'Bearer not-a-token'],
    ['empty', 'Bearer '],
    ['of another scheme', 'Basic Ym9iOnNlY3JldA=='],
    ['malformed', 'Bearer a b c'],
    ['non-ASCII', 'Bearer ünïcode'],
  ])('a %s token', (_name, authorization) => {
    test('401 invalid_token with a Bearer challenge', async () => {
      const res = await userinfo(t, authorization);
      expectErrorResponse(res, 401, 'invalid_token');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="/);
      expect(res.headers.get('www-authenticate')).not.toContain('invalid_request');
    });
  });

  test('an expired token: 401 invalid_token', async () => {
    // 2.5 s after it was issued (it lives 2 s): the tests above spent part of that already.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, issuedAt + 2500 - Date.now())));
    const res = await userinfo(t, `Bearer ${accessToken}`);
    expect(res).toMatchObject({ status: 401, body: { error: 'invalid_token' } });
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});
