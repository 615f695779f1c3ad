/**
 * A plain OAuth 2.0 client library, simple-oauth2 v5, configured only with the spec's paths
 * (no discovery) and client credentials in the form body, as the spec describes: authorize
 * URL, login + consent, token, then the profile with the Bearer token.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { AuthorizationCode } from 'simple-oauth2';
import { Browser } from '../helpers/browser.js';
import type { TestClient } from '../helpers/browser.js';
import { createUser, registerClient, userinfo } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('simple-oauth2 v5', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t.close(); });

  function oauthClient(registered: TestClient, secret = registered.client_secret) {
    return new AuthorizationCode({
      client: { id: registered.client_id, secret },
      auth: { tokenHost: t.baseUrl, tokenPath: '/api/token.php', authorizeHost: t.baseUrl, authorizePath: '/api/authorize.php' },
      // simple-oauth2's option is `authorizationMethod` ('body' = client_id/client_secret in the form body, as the spec says).
      options: { authorizationMethod: 'body', bodyFormat: 'form' },
    });
  }

  async function codeFor(oauth: AuthorizationCode, registered: TestClient, user: { username: string; password: string }, state: string) {
    const url = new URL(oauth.authorizeURL({ redirect_uri: registered.redirect_uri, state }));
    expect(`${url.origin}${url.pathname}`).toBe(`${t.baseUrl}/api/authorize.php`);
    expect(url.searchParams.get('response_type')).toBe('code');
    const redirect = await new Browser(t.baseUrl).authorize(registered, user, Object.fromEntries(url.searchParams));
    expect(`${redirect.origin}${redirect.pathname}`).toBe(registered.redirect_uri);
    expect(redirect.searchParams.get('state')).toBe(state);
    const code = redirect.searchParams.get('code');
    expect(code).toBeTruthy();
    return code!;
  }

  test('authorize, log in, consent, exchange the code and read the profile', async () => {
    const user = await createUser(t, { email: 'simple@example.com', fullName: 'Simple Client User' });
    const registered = await registerClient(t);
    const oauth = oauthClient(registered);
    const code = await codeFor(oauth, registered, user, 'simple-state');

    const accessToken = await oauth.getToken({ code, redirect_uri: registered.redirect_uri });
    expect(accessToken.token).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(typeof accessToken.token.access_token).toBe('string');
    expect(accessToken.expired()).toBe(false);

    const profile = await userinfo(t, `Bearer ${String(accessToken.token.access_token)}`);
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({ username: user.username, email: 'simple@example.com', full_name: 'Simple Client User' });
  });

  test('a wrong client secret in the body is refused with invalid_client (401)', async () => {
    const user = await createUser(t);
    const registered = await registerClient(t);
    const code = await codeFor(oauthClient(registered), registered, user, 'bad-secret');

    const error = await oauthClient(registered, 'not-the-secret')
      .getToken({ code, redirect_uri: registered.redirect_uri })
      .then(() => undefined, (thrown: unknown) => thrown) as { output?: { statusCode: number }; data?: { payload?: { error?: string } } } | undefined;
    expect(error?.output?.statusCode).toBe(401);
    expect(error?.data?.payload?.error).toBe('invalid_client');
  });
});
