/**
 * The spec's five steps, end to end, in both modes: register, log in and consent, receive a
 * code, exchange it, read the profile.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from './helpers/browser.js';
import { createUser, registerClient, tokenRequest, userinfo } from './helpers/fixtures.js';
import { startTestApp } from './helpers/test-app.js';
import type { Mode, TestApp } from './helpers/test-app.js';

describe.each<Mode>(['postgres', 'embedded'])('authorization-code flow (%s)', (mode) => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ mode }); });
  afterAll(async () => { await t.close(); });

  test('a registered client obtains a token and reads the user profile', async () => {
    const user = await createUser(t, { email: 'alice@example.com', fullName: 'Alice Example' });
    const client = await registerClient(t);
    const redirect = await new Browser(t.baseUrl).authorize(client, user, { state: 'xyz' });

    expect(`${redirect.origin}${redirect.pathname}`).toBe(client.redirect_uri);
    expect(redirect.searchParams.get('state')).toBe('xyz');
    expect(redirect.searchParams.get('iss')).toBe(t.baseUrl);
    const code = redirect.searchParams.get('code')!;
    expect(code).toBeTruthy();

    const token = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
    expect(token.status).toBe(200);
    expect(token.headers.get('cache-control')).toBe('no-store');
    expect(token.headers.get('content-type')).toMatch(/^application\/json/);
    expect(token.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(typeof token.body.access_token).toBe('string');

    const profile = await userinfo(t, `Bearer ${token.body.access_token}`);
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({ username: user.username, email: 'alice@example.com', full_name: 'Alice Example' });
  });

  test('a user who denies consent sends the client access_denied', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const redirect = await new Browser(t.baseUrl).authorize(client, user, { state: 's1' }, 'deny');
    expect(redirect.searchParams.get('error')).toBe('access_denied');
    expect(redirect.searchParams.get('state')).toBe('s1');
    expect(redirect.searchParams.get('code')).toBeNull();
  });

  test('a logged-in user is not asked to log in again', async () => {
    const user = await createUser(t);
    const client = await registerClient(t);
    const browser = new Browser(t.baseUrl);
    await browser.authorize(client, user);
    const again = await browser.authorize(client, undefined);
    expect(again.searchParams.get('code')).toBeTruthy();
  });
});
