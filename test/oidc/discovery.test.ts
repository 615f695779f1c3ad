/**
 * Discovery metadata at RFC 8414's `/.well-known/oauth-authorization-server` and at OpenID's
 * `/.well-known/openid-configuration`, and RFC 9207's `iss` on every authorization response.
 * `scopes_supported` lists the profile's scopes and every declared resource server's, a
 * resource added while the service runs included.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('discovery', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ env: { RESOURCES: JSON.stringify([{ uri: 'https://tools.example/mcp', scopes: 'tools:read tools:call' }]) } }); });
  afterAll(async () => { await t.close(); });

  describe.each(['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'])('GET %s', (path) => {
    test('issuer, the spec paths, revocation and introspection, registration, code + S256, client_secret_post/basic, private_key_jwt (asymmetric) and public clients, iss parameter', async () => {
      const res = await fetch(`${t.baseUrl}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const metadata = await res.json() as Record<string, unknown>;
      const methods = ['client_secret_post', 'client_secret_basic', 'private_key_jwt'];
      const algorithms = ['RS256', 'PS256', 'ES256', 'EdDSA'];
      expect(metadata).toMatchObject({
        issuer: t.baseUrl,
        authorization_endpoint: `${t.baseUrl}/api/authorize.php`,
        token_endpoint: `${t.baseUrl}/api/token.php`,
        userinfo_endpoint: `${t.baseUrl}/api/userinfo.php`,
        jwks_uri: `${t.baseUrl}/api/jwks.php`,
        revocation_endpoint: `${t.baseUrl}/api/revoke.php`,
        introspection_endpoint: `${t.baseUrl}/api/introspect.php`,
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
        registration_endpoint: `${t.baseUrl}/api/register.php`,
        token_endpoint_auth_methods_supported: [...methods, 'none'],
        revocation_endpoint_auth_methods_supported: [...methods, 'none'],
        introspection_endpoint_auth_methods_supported: methods,
        token_endpoint_auth_signing_alg_values_supported: algorithms,
        revocation_endpoint_auth_signing_alg_values_supported: algorithms,
        introspection_endpoint_auth_signing_alg_values_supported: algorithms,
        scopes_supported: ['openid', 'profile', 'email', 'tools:read', 'tools:call'],
      });
      expect([...metadata.grant_types_supported as string[]].sort()).toEqual(['authorization_code', 'client_credentials', 'refresh_token']);
    });

    test('every URL it names is served (a POST-only endpoint answers GET with 405, never 404)', async () => {
      const metadata = await (await fetch(`${t.baseUrl}${path}`)).json() as Record<string, unknown>;
      const urls = Object.entries(metadata).filter(([name, value]) => name !== 'issuer' && typeof value === 'string' && value.startsWith(t.baseUrl));
      expect(urls.length).toBeGreaterThanOrEqual(6);
      for (const [name, url] of urls) {
        const res = await fetch(url as string, { headers: { accept: 'application/json' }, redirect: 'manual' });
        expect({ name, served: res.status !== 404 }).toEqual({ name, served: true });
      }
    });
  });

  test('scopes_supported shows a resource declared while the service runs within seconds; offline_access is not listed', async () => {
    await t.app.db.prisma.resourceServer.create({ data: { uri: 'https://added.example/api', name: 'Added', scopes: ['api:write'], accessTokenTtl: 600 } });
    const listed = async () => (await (await fetch(`${t.baseUrl}/.well-known/oauth-authorization-server`)).json() as { scopes_supported: string[] }).scopes_supported;
    const started = Date.now();
    while (!(await listed()).includes('api:write') && Date.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await listed()).toEqual(['openid', 'profile', 'email', 'tools:read', 'tools:call', 'api:write']);
    expect(await listed()).not.toContain('offline_access');
  });

  test('both documents are the same', async () => {
    const [oauth, openid] = await Promise.all(['oauth-authorization-server', 'openid-configuration']
      .map(async (name) => (await fetch(`${t.baseUrl}/.well-known/${name}`)).json()));
    expect(oauth).toEqual(openid);
  });
});

describe('iss on every authorization response (RFC 9207)', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t.close(); });

  test('on a code, on a refusal (access_denied) and on an error redirect', async () => {
    const client = await registerClient(t);
    const user = await createUser(t);
    const approved = await new Browser(t.baseUrl).authorize(client, user, { state: 's1' });
    expect(approved.searchParams.get('code')).toBeTruthy();
    expect(approved.searchParams.get('iss')).toBe(t.baseUrl);

    const denied = await new Browser(t.baseUrl).authorize(client, user, { state: 's2' }, 'deny');
    expect(denied.searchParams.get('error')).toBe('access_denied');
    expect(denied.searchParams.get('iss')).toBe(t.baseUrl);

    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'token', state: 's3' });
    const res = await fetch(`${t.baseUrl}/api/authorize.php?${query}`, { redirect: 'manual' });
    const location = new URL(res.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('unsupported_response_type');
    expect(location.searchParams.get('iss')).toBe(t.baseUrl);
  });
});
