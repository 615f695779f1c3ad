/**
 * openid-client v6 registers itself with `dynamicClientRegistration` (discovery, then RFC 7591
 * at the advertised registration_endpoint) as a confidential client (client_secret_basic) and as
 * a public one (none), each then completing the code flow with PKCE, state and the RFC 9207
 * `iss` check; the confidential one reads userinfo, the public one refreshes. With
 * REGISTRATION_INITIAL_ACCESS_TOKEN set, its `initialAccessToken` option is what it takes.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { Browser } from '../helpers/browser.js';
import type { TestUser } from '../helpers/browser.js';
import { createUser } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const TOKEN = 'an-initial-access-token-for-this-test-only';
const REDIRECT = 'http://127.0.0.1:9999/callback';
const insecure = { execute: [client.allowInsecureRequests] }; // the test server is plain http on localhost

let t: TestApp;
let user: TestUser & { email: string; fullName: string };
beforeAll(async () => {
  t = await startTestApp({ env: { REGISTRATION_INITIAL_ACCESS_TOKEN: TOKEN } });
  user = await createUser(t, { email: 'dcr@example.com', fullName: 'Dcr User' });
});
afterAll(async () => { await t?.close(); });

/** PKCE S256 and state, the browser through login and consent; the redirect back. */
async function authorize(config: client.Configuration, params: Record<string, string> = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, ...params,
  });
  const redirect = await new Browser(t.baseUrl).authorize({ client_id: config.clientMetadata().client_id, client_secret: '', redirect_uri: REDIRECT }, user, Object.fromEntries(url.searchParams));
  return { redirect, verifier, state };
}

describe('openid-client dynamicClientRegistration', () => {
  test('a confidential client (client_secret_basic): registers, completes the code flow, reads userinfo', async () => {
    const config = await client.dynamicClientRegistration(new URL(t.baseUrl), {
      redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic', client_name: 'openid-client (confidential)',
    }, undefined, { ...insecure, initialAccessToken: TOKEN });
    const metadata = config.clientMetadata();
    expect(metadata).toMatchObject({ client_id: expect.any(String), client_secret: expect.any(String), token_endpoint_auth_method: 'client_secret_basic' });
    // Its secret is used with HTTP Basic, as registered.
    const basic = new client.Configuration(config.serverMetadata(), metadata.client_id, metadata.client_secret as string, client.ClientSecretBasic(metadata.client_secret as string));
    client.allowInsecureRequests(basic);

    const { redirect, verifier, state } = await authorize(basic);
    expect(redirect.searchParams.get('iss')).toBe(t.baseUrl);
    const tokens = await client.authorizationCodeGrant(basic, redirect, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    const subject = tokens.claims()?.sub ?? client.skipSubjectCheck;
    expect(await client.fetchUserInfo(basic, tokens.access_token, subject)).toMatchObject({ username: user.username, email: 'dcr@example.com', full_name: 'Dcr User' });
  });

  test('a public client (none): registers without a secret, completes the code flow, refreshes', async () => {
    const config = await client.dynamicClientRegistration(new URL(t.baseUrl), {
      redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], client_name: 'openid-client (public)',
    }, client.None(), { ...insecure, initialAccessToken: TOKEN });
    expect(config.clientMetadata().client_secret).toBeUndefined();

    const { redirect, verifier, state } = await authorize(config);
    const tokens = await client.authorizationCodeGrant(config, redirect, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  });

  test('without the initial access token it is refused: 401 with the Bearer challenge invalid_token', async () => {
    const error = await client.dynamicClientRegistration(new URL(t.baseUrl), { redirect_uris: [REDIRECT] }, undefined, insecure)
      .then(() => undefined, (thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    const challenge = error as client.WWWAuthenticateChallengeError;
    expect(challenge.status).toBe(401);
    expect(challenge.cause).toEqual([expect.objectContaining({ scheme: 'bearer', parameters: expect.objectContaining({ error: 'invalid_token' }) })]);
  });
});
