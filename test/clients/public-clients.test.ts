/**
 * Public clients (token_endpoint_auth_method none) and native apps (RFC 8252), registered with
 * RFC 7591: PKCE S256 is required (an authorization request without it goes back to the client
 * as invalid_request); the token endpoint takes client_id + code_verifier without a secret, for
 * them only; refresh tokens rotate. A native app's loopback redirect matches on any port and a
 * private-use scheme receives the code; a web client's loopback redirect still matches exactly.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createClientSettings } from '../../src/clients/client-settings.js';
import { Browser } from '../helpers/browser.js';
import type { TestUser } from '../helpers/browser.js';
import { createUser, expectErrorResponse, postForm, registerClient, registerDynamicClient, tokenRequest } from '../helpers/fixtures.js';
import { pkcePair, pkceParams } from '../helpers/pkce.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

let t: TestApp;
let user: TestUser;
beforeAll(async () => {
  t = await startTestApp();
  user = await createUser(t);
});
afterAll(async () => { await t?.close(); });

const registerDynamic = (metadata: Record<string, unknown>) => registerDynamicClient(t, metadata);

/** Authorizes `clientId` at `redirectUri` (extra parameters added); the redirect back. */
const authorize = (clientId: string, redirectUri: string, params: Record<string, string> = {}) => new Browser(t.baseUrl)
  .authorize({ client_id: clientId, client_secret: '', redirect_uri: redirectUri }, user, params);

describe('a public client (browser app)', () => {
  const REDIRECT = 'https://spa.example/callback';
  let clientId: string;
  beforeAll(async () => {
    ({ client_id: clientId } = await registerDynamic({
      redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], client_name: 'SPA',
    }));
  });

  test('without PKCE: back to the client as invalid_request', async () => {
    const query = new URLSearchParams({ client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', state: 'st' });
    const res = await fetch(`${t.baseUrl}/api/authorize.php?${query}`, { redirect: 'manual' });
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({ error: 'invalid_request', state: 'st', error_description: expect.stringMatching(/PKCE/) });
  });

  test('with PKCE: the code for client_id + code_verifier, no secret; the refresh token rotates', async () => {
    const pkce = pkcePair();
    const code = (await authorize(clientId, REDIRECT, pkceParams(pkce))).searchParams.get('code')!;
    const res = await tokenRequest(t, { code, client_id: clientId, code_verifier: pkce.verifier, redirect_uri: REDIRECT });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, refresh_token: expect.any(String) });

    const refreshed = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: res.body.refresh_token as string, client_id: clientId });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(res.body.refresh_token);
    // A rotated refresh token used again ends the grant (RFC 9700 §4.14.2).
    expectErrorResponse(await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: res.body.refresh_token as string, client_id: clientId }), 400, 'invalid_grant');
    expectErrorResponse(await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token as string, client_id: clientId }), 400, 'invalid_grant');
  });

  test('a wrong code_verifier is invalid_code; a secret it does not have is invalid_client', async () => {
    const pkce = pkcePair();
    const code = (await authorize(clientId, REDIRECT, pkceParams(pkce))).searchParams.get('code')!;
    expectErrorResponse(await tokenRequest(t, { code, client_id: clientId, code_verifier: pkcePair().verifier }), 400, 'invalid_code');
    const other = (await authorize(clientId, REDIRECT, pkceParams(pkce))).searchParams.get('code')!;
    expectErrorResponse(await tokenRequest(t, { code: other, client_id: clientId, client_secret: 'guess', code_verifier: pkce.verifier }), 401, 'invalid_client');
  });

  test('it may revoke its own token with its client_id; it cannot introspect', async () => {
    const pkce = pkcePair();
    const code = (await authorize(clientId, REDIRECT, pkceParams(pkce))).searchParams.get('code')!;
    const tokens = await tokenRequest(t, { code, client_id: clientId, code_verifier: pkce.verifier });
    const introspected = await postForm(t, '/api/introspect.php', { token: tokens.body.access_token as string, client_id: clientId });
    expectErrorResponse(introspected, 401, 'invalid_client');
    expect((await postForm(t, '/api/revoke.php', { token: tokens.body.refresh_token as string, client_id: clientId })).status).toBe(200);
    expectErrorResponse(await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token as string, client_id: clientId }), 400, 'invalid_grant');
  });
});

describe('a public client has no secret to rotate', () => {
  test('a rotation is refused, and it stays public', async () => {
    const { client_id: clientId } = await registerDynamic({ redirect_uris: ['https://spa.example/callback'], token_endpoint_auth_method: 'none' });
    const settings = createClientSettings(t.app.records.change);
    await expect(settings.rotateSecret(clientId, { actor: 'operator' })).rejects.toThrow('it has no secret to rotate');
    expect((await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId } })).clientSecretHash).toBeNull();
  });
});

describe('confidential clients are refused without their secret, as before', () => {
  test('a spec client and an RFC 7591 confidential client: 400 missing client_secret', async () => {
    const spec = await registerClient(t);
    const pkce = pkcePair();
    const code = (await authorize(spec.client_id, spec.redirect_uri, pkceParams(pkce))).searchParams.get('code')!;
    const res = await tokenRequest(t, { code, client_id: spec.client_id, code_verifier: pkce.verifier });
    expectErrorResponse(res, 400, 'invalid_request');
    expect(res.body.error_description).toBe("missing required parameter 'client_secret'");

    const dynamic = await registerDynamic({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'client_secret_post' });
    const dynamicCode = (await authorize(dynamic.client_id, 'https://app.example/cb')).searchParams.get('code')!;
    expectErrorResponse(await tokenRequest(t, { code: dynamicCode, client_id: dynamic.client_id }), 400, 'invalid_request');
    expect((await tokenRequest(t, { code: dynamicCode, client_id: dynamic.client_id, client_secret: dynamic.client_secret! })).status).toBe(200);
  });

  test('an unknown client_id without a secret is refused as before', async () => {
    const res = await tokenRequest(t, { code: 'x', client_id: 'nobody' });
    expectErrorResponse(res, 400, 'invalid_request');
  });
});

describe('native apps (RFC 8252)', () => {
  let native: string;
  let web: { client_id: string; client_secret?: string };
  beforeAll(async () => {
    ({ client_id: native } = await registerDynamic({
      application_type: 'native', token_endpoint_auth_method: 'none', client_name: 'CLI',
      redirect_uris: ['http://127.0.0.1/callback', 'http://[::1]/callback', 'http://localhost/callback', 'com.example.app:/oauth2redirect'],
    }));
    web = await registerDynamic({ redirect_uris: ['http://127.0.0.1:4000/callback'] });
  });

  test.each(['http://127.0.0.1:54321/callback', 'http://[::1]:61000/callback', 'http://localhost:8123/callback'])('a loopback redirect on a port chosen at run time: %s', async (redirectUri) => {
    const pkce = pkcePair();
    const redirect = await authorize(native, redirectUri, pkceParams(pkce));
    expect(`${redirect.origin}${redirect.pathname}`).toBe(redirectUri);
    const res = await tokenRequest(t, { code: redirect.searchParams.get('code')!, client_id: native, code_verifier: pkce.verifier, redirect_uri: redirectUri });
    expect(res.status).toBe(200);
  });

  test('a private-use scheme receives the code', async () => {
    const pkce = pkcePair();
    const redirect = await authorize(native, 'com.example.app:/oauth2redirect', pkceParams(pkce));
    expect(redirect.protocol).toBe('com.example.app:');
    expect(redirect.searchParams.get('code')).toBeTruthy();
  });

  test('another path on loopback, or a web client\'s loopback redirect on another port: refused, not redirected', async () => {
    for (const [clientId, redirectUri] of [[native, 'http://127.0.0.1:54321/other'], [web.client_id, 'http://127.0.0.1:5000/callback']] as const) {
      const query = new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', ...pkceParams(pkcePair()) });
      const res = await fetch(`${t.baseUrl}/api/authorize.php?${query}`, { redirect: 'manual', headers: { accept: 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.json()).toMatchObject({ error: 'invalid_request' });
    }
    // The web client's own port still works.
    expect((await authorize(web.client_id, 'http://127.0.0.1:4000/callback')).searchParams.get('code')).toBeTruthy();
  });
});
