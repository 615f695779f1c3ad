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
  beforeAll(async () => {
    t = await startTestApp({ env: { ACCESS_TOKEN_TTL: '2' } });
    const client = await registerClient(t);
    const user = await createUser(t, { username: 'bob', email: 'bob@example.com', fullName: 'Bob Builder' });
    const code = await obtainCode(t.baseUrl, client, user);
    const token = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    expect(token.body.expires_in).toBe(2);
    accessToken = String(token.body.access_token);
  });
  afterAll(async () => { await t.close(); });

  test('a valid token reads username, email and full_name', async () => {
    const res = await userinfo(t, `Bearer ${accessToken}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ username: 'bob', email: 'bob@example.com', full_name: 'Bob Builder' });
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
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const res = await userinfo(t, `Bearer ${accessToken}`);
    expect(res).toMatchObject({ status: 401, body: { error: 'invalid_token' } });
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});
