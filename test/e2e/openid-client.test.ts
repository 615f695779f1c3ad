/**
 * A standard certified client library, openid-client v6, completes the flow against the
 * service: discovery, PKCE S256 + state, RFC 9207 `iss` check on the redirect, the code grant
 * with client_secret_post and client_secret_basic, and userinfo. A wrong PKCE verifier is
 * refused with the spec's `invalid_code`.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { authorizeWithPkce, discover } from '../helpers/openid-client.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('openid-client v6', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t.close(); });

  test('discovery advertises the spec paths and the RFC 9207 iss parameter', async () => {
    const registered = await registerClient(t);
    const config = await discover(t.baseUrl, registered);
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(t.baseUrl);
    expect(metadata.authorization_endpoint).toBe(`${t.baseUrl}/api/authorize.php`);
    expect(metadata.token_endpoint).toBe(`${t.baseUrl}/api/token.php`);
    expect(metadata.userinfo_endpoint).toBe(`${t.baseUrl}/api/userinfo.php`);
    expect(metadata.code_challenge_methods_supported).toContain('S256');
    expect(metadata.authorization_response_iss_parameter_supported).toBe(true);
    expect(metadata.token_endpoint_auth_methods_supported).toEqual(expect.arrayContaining(['client_secret_post', 'client_secret_basic']));
  });

  test.each(['post', 'basic'] as const)('code grant with PKCE (client_secret_%s) and userinfo', async (auth) => {
    const user = await createUser(t, { email: 'oidc@example.com', fullName: 'Oidc Client User' });
    const registered = await registerClient(t);
    const config = await discover(t.baseUrl, registered, auth);
    const { url, redirect, verifier, state } = await authorizeWithPkce(t.baseUrl, config, registered, user);
    expect(`${url.origin}${url.pathname}`).toBe(`${t.baseUrl}/api/authorize.php`);
    expect(redirect.searchParams.get('code')).toBeTruthy();
    expect(redirect.searchParams.get('iss')).toBe(t.baseUrl);

    // Validates state and `iss` on the redirect, then redeems the code with the verifier.
    const tokens = await client.authorizationCodeGrant(config, redirect, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(typeof tokens.access_token).toBe('string');

    const subject = tokens.claims()?.sub ?? client.skipSubjectCheck;
    const profile = await client.fetchUserInfo(config, tokens.access_token, subject);
    expect(profile).toMatchObject({ username: user.username, email: 'oidc@example.com', full_name: 'Oidc Client User' });
  });

  test('a wrong code_verifier is refused with invalid_code', async () => {
    const user = await createUser(t);
    const registered = await registerClient(t);
    const config = await discover(t.baseUrl, registered);
    const { redirect, state } = await authorizeWithPkce(t.baseUrl, config, registered, user);

    const error = await client
      .authorizationCodeGrant(config, redirect, { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: state })
      .then(() => undefined, (thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(client.ResponseBodyError);
    expect((error as client.ResponseBodyError).error).toBe('invalid_code');
    expect((error as client.ResponseBodyError).status).toBe(400);
  });
});
