/**
 * openid-client v6 as a client team would set it up: discovery with client_secret_post or
 * client_secret_basic, and an authorization with PKCE S256 + state walked through login and
 * consent by the test browser.
 *
 * @example const config = await discover(t.baseUrl, registered, 'basic'); const { redirect } = await authorizeWithPkce(t.baseUrl, config, registered, user);
 */
import * as client from 'openid-client';
import { Browser } from './browser.js';
import type { TestClient, TestUser } from './browser.js';

/** Discovery from `/.well-known/openid-configuration`, or RFC 8414's document with `algorithm: 'oauth2'`. */
export function discover(baseUrl: string, registered: TestClient, auth: 'post' | 'basic' = 'post', algorithm: 'oidc' | 'oauth2' = 'oidc') {
  const method = auth === 'post' ? client.ClientSecretPost(registered.client_secret) : client.ClientSecretBasic(registered.client_secret);
  return client.discovery(new URL(baseUrl), registered.client_id, registered.client_secret, method, {
    algorithm,
    execute: [client.allowInsecureRequests], // the test server is plain http on localhost
  });
}

/** Builds the authorization URL with PKCE S256 and state, walks login + consent, returns the redirect. */
export async function authorizeWithPkce(baseUrl: string, config: client.Configuration, registered: TestClient, user: TestUser) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: registered.redirect_uri,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  const redirect = await new Browser(baseUrl).authorize(registered, user, Object.fromEntries(url.searchParams));
  return { url, redirect, verifier, state };
}
