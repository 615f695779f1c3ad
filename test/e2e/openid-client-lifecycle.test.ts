/**
 * The token lifecycle through a standard client library, as a new user of the service would
 * drive it: openid-client v6 discovers the server from RFC 8414 metadata
 * (`/.well-known/oauth-authorization-server`), runs the code flow with PKCE, refreshes
 * (rotation), introspects and revokes, with client_secret_post and client_secret_basic.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { authorizeWithPkce, discover } from '../helpers/openid-client.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('openid-client v6: refresh, introspection, revocation', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t.close(); });

  async function signIn(config: client.Configuration, registered: TestClient, user: TestUser) {
    const { redirect, verifier, state } = await authorizeWithPkce(t.baseUrl, config, registered, user);
    return client.authorizationCodeGrant(config, redirect, { pkceCodeVerifier: verifier, expectedState: state });
  }

  test.each(['post', 'basic'] as const)('client_secret_%s', async (auth) => {
    const user = await createUser(t);
    const registered = await registerClient(t);
    const config = await discover(t.baseUrl, registered, auth, 'oauth2'); // RFC 8414 metadata, not OpenID's
    const metadata = config.serverMetadata();
    expect(metadata.revocation_endpoint).toBe(`${t.baseUrl}/api/revoke.php`);
    expect(metadata.introspection_endpoint).toBe(`${t.baseUrl}/api/introspect.php`);

    const tokens = await signIn(config, registered, user);
    expect(typeof tokens.refresh_token).toBe('string');

    // Refresh: a new pair; the new access token reads the profile.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const profile = await client.fetchUserInfo(config, refreshed.access_token, client.skipSubjectCheck);
    expect(profile.username).toBe(user.username);

    // Introspection: the new access token is active; the rotated-away refresh token is not.
    const active = await client.tokenIntrospection(config, refreshed.access_token);
    expect(active).toMatchObject({ active: true, client_id: registered.client_id, username: user.username, token_type: 'Bearer' });
    expect(typeof active.exp).toBe('number');
    expect(typeof active.iat).toBe('number');
    expect(await client.tokenIntrospection(config, tokens.refresh_token!)).toEqual({ active: false });

    // Revocation: the refresh token, and with it the grant's access token.
    await client.tokenRevocation(config, refreshed.refresh_token!, { token_type_hint: 'refresh_token' });
    expect(await client.tokenIntrospection(config, refreshed.access_token)).toEqual({ active: false });
    const error = await client.refreshTokenGrant(config, refreshed.refresh_token!).then(() => undefined, (thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(client.ResponseBodyError);
    expect((error as client.ResponseBodyError).error).toBe('invalid_grant');
    expect((error as client.ResponseBodyError).status).toBe(400);
  });
});
