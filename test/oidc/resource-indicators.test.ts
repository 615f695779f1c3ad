/**
 * RFC 8707 resource indicators with RFC 9068 JWT access tokens: a declared resource (in
 * RESOURCES, or stored by resources:add) named at authorize, token and refresh gets a JWT whose
 * `aud` is that resource, checked offline against the service's JWKS; an undeclared one gets
 * `invalid_target`; one URI matches with or without a trailing slash; without `resource`, the
 * token is today's opaque one for userinfo.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { createAuthorizedApps } from '../../src/oidc/authorized-apps.js';
import { Browser } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { basicAuth, createUser, expectErrorResponse, postForm, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const TOOLS = 'https://tools.example/mcp';
const STORED = 'https://stored.example';

let t: TestApp;
let client: TestClient;
let user: TestUser;
let jwks: ReturnType<typeof createRemoteJWKSet>;
beforeAll(async () => {
  t = await startTestApp({ env: { RESOURCES: JSON.stringify([{ uri: TOOLS, scopes: 'tools:read tools:call', access_token_ttl: 300 }]) } });
  await t.app.db.prisma.resourceServer.create({ data: { uri: STORED, name: 'Stored API', scopes: ['api:read'], accessTokenTtl: 120 } });
  client = await registerClient(t);
  user = await createUser(t);
  jwks = createRemoteJWKSet(new URL(`${t.baseUrl}/api/jwks.php`));
});
afterAll(async () => { await t?.close(); });

async function code(params: Record<string, string>): Promise<string> {
  const redirect = await new Browser(t.baseUrl).authorize(client, user, params);
  const value = redirect.searchParams.get('code');
  if (!value) throw new Error(`no code: ${redirect}`);
  return value;
}

const exchange = (value: string, extra: Record<string, string> = {}) => tokenRequest(t, { code: value, client_id: client.client_id, client_secret: client.client_secret, ...extra });
const refresh = (token: string, extra: Record<string, string> = {}) => tokenRequest(t, {
  grant_type: 'refresh_token', refresh_token: token, client_id: client.client_id, client_secret: client.client_secret, ...extra,
});

describe('a declared resource gets an RFC 9068 JWT access token', () => {
  test('at authorize, token and refresh: typ at+jwt, iss, sub, aud, client_id, scope, exp, iat, jti; verified offline', async () => {
    const res = await exchange(await code({ resource: TOOLS, scope: 'tools:read' }), { resource: TOOLS });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 300, scope: 'tools:read', refresh_token: expect.any(String) });
    const token = res.body.access_token as string;
    expect(decodeProtectedHeader(token)).toMatchObject({ typ: 'at+jwt', alg: 'RS256', kid: expect.any(String) });
    const { payload } = await jwtVerify(token, jwks, { issuer: t.baseUrl, audience: TOOLS, typ: 'at+jwt' });
    const account = await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: user.username } });
    expect(payload).toEqual({
      iss: t.baseUrl, sub: account.id, aud: TOOLS, client_id: client.client_id, scope: 'tools:read',
      iat: expect.any(Number), exp: payload.iat! + 300, jti: expect.any(String), grant_id: expect.any(String),
    });

    // The JWT is for the resource, not for the profile: userinfo refuses it.
    expectErrorResponse(await userinfo(t, `Bearer ${token}`), 401, 'invalid_token');

    const refreshed = await refresh(res.body.refresh_token as string, { resource: TOOLS });
    expect(refreshed.status).toBe(200);
    const again = await jwtVerify(refreshed.body.access_token as string, jwks, { issuer: t.baseUrl, audience: TOOLS });
    expect(again.payload.scope).toBe('tools:read');
  });

  test('a resource without scope asks for every scope declared for it; the token request may leave the granted resource out', async () => {
    const res = await exchange(await code({ resource: TOOLS }));
    expect(res.status).toBe(200);
    const { payload } = await jwtVerify(res.body.access_token as string, jwks, { issuer: t.baseUrl, audience: TOOLS });
    expect(payload.scope).toBe('tools:read tools:call');
  });

  test('one URI with or without a trailing slash; aud is the URI as declared; a stored resource has its own TTL', async () => {
    const res = await exchange(await code({ resource: `${STORED}/`, scope: 'api:read' }), { resource: `${STORED}/` });
    expect(res.status).toBe(200);
    expect(res.body.expires_in).toBe(120);
    const { payload } = await jwtVerify(res.body.access_token as string, jwks, { issuer: t.baseUrl, audience: STORED });
    expect(payload.aud).toBe(STORED);
  });

  test('scopes the resource does not declare are not in its token', async () => {
    const res = await exchange(await code({ resource: TOOLS, scope: 'tools:read api:read admin' }), { resource: TOOLS });
    const { payload } = await jwtVerify(res.body.access_token as string, jwks, { issuer: t.baseUrl, audience: TOOLS });
    expect(payload.scope).toBe('tools:read');
  });
});

describe('invalid_target', () => {
  test('an undeclared resource at authorize goes back to the client as invalid_target', async () => {
    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', resource: 'https://nobody.example/', state: 's' });
    const res = await fetch(`${t.baseUrl}/api/authorize.php?${query}`, { redirect: 'manual' });
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(client.redirect_uri);
    expect(location.searchParams.get('error')).toBe('invalid_target');
    expect(location.searchParams.get('error_description')).toContain('https://nobody.example/');
    expect(location.searchParams.get('state')).toBe('s');
  });

  test('a resource no declaration could be (a NUL, another control character, a space) names none: invalid_target, never a 500', async () => {
    for (const resource of ['https://tools.example/\u0000', 'https://tools.example/\u0007x', `${TOOLS}\u0000`, 'https://tools.example/ a']) {
      const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', resource, state: 's' });
      const res = await fetch(`${t.baseUrl}/api/authorize.php?${query}`, { redirect: 'manual' });
      expect({ resource, status: res.status }).toEqual({ resource, status: 303 });
      expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_target');
      expectErrorResponse(await exchange(await code({ resource: TOOLS, scope: 'tools:read' }), { resource }), 400, 'invalid_target');
    }
  });

  test('a resource at the token endpoint that the grant does not hold, or at refresh', async () => {
    const res = await exchange(await code({ resource: TOOLS, scope: 'tools:read' }), { resource: STORED });
    expectErrorResponse(res, 400, 'invalid_target');

    const granted = await exchange(await code({ resource: TOOLS, scope: 'tools:read' }), { resource: TOOLS });
    expectErrorResponse(await refresh(granted.body.refresh_token as string, { resource: 'https://nobody.example/' }), 400, 'invalid_target');
  });

  test('a resource removed from the store gets no new token', async () => {
    const gone = 'https://gone.example/api';
    await t.app.db.prisma.resourceServer.create({ data: { uri: gone, name: 'Gone', scopes: ['x'], accessTokenTtl: 60 } });
    const granted = await exchange(await code({ resource: gone }), { resource: gone });
    expect(granted.status).toBe(200);
    await t.app.db.prisma.resourceServer.delete({ where: { uri: gone } });
    expectErrorResponse(await refresh(granted.body.refresh_token as string, { resource: gone }), 400, 'invalid_target');
  });
});

describe('the applications page', () => {
  test('lists a grant for a resource with the resource\'s scopes', async () => {
    const other = await createUser(t);
    const redirect = await new Browser(t.baseUrl).authorize(client, other, { resource: TOOLS, scope: 'tools:call' });
    expect(redirect.searchParams.get('code')).toBeTruthy();
    const account = await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: other.username } });
    expect(await createAuthorizedApps({ prisma: t.app.db.prisma }).list(account.id)).toEqual([
      { clientId: client.client_id, clientName: 'Test App', scopes: ['tools:call'], authorizedAt: expect.any(Date) },
    ]);
  });
});

describe('without resource, nothing changes', () => {
  test('the opaque token for userinfo, with openid', async () => {
    const res = await exchange(await code({}));
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('openid');
    expect((res.body.access_token as string).split('.')).toHaveLength(1);
    expect((await userinfo(t, `Bearer ${res.body.access_token as string}`)).body.username).toBe(user.username);
  });
});

describe('introspection and revocation of a resource\'s JWT', () => {
  const introspect = (token: string, who: TestClient = client) => postForm(t, '/api/introspect.php', { token }, { authorization: basicAuth(who) });

  test('introspection reports aud; another client sees it inactive; a revoked grant makes it inactive (the JWT itself still verifies until exp)', async () => {
    const tokens = await exchange(await code({ resource: TOOLS, scope: 'tools:call' }), { resource: TOOLS });
    const jwt = tokens.body.access_token as string;
    const active = await introspect(jwt);
    expect(active.status).toBe(200);
    expect(active.body).toEqual({
      active: true, aud: TOOLS, scope: 'tools:call', client_id: client.client_id, username: user.username, token_type: 'Bearer',
      sub: expect.any(String), iss: t.baseUrl, exp: expect.any(Number), iat: expect.any(Number), jti: expect.any(String),
    });
    expect((await introspect(jwt, await registerClient(t))).body).toEqual({ active: false });
    const [header, payload] = jwt.split('.');
    expect((await introspect(`${header}.${payload}.AAAA`)).body).toEqual({ active: false });

    // RFC 7009 §2.2.1: the JWT cannot be revoked itself; revoking the refresh token ends the grant.
    expectErrorResponse(await postForm(t, '/api/revoke.php', { token: jwt }, { authorization: basicAuth(client) }), 400, 'unsupported_token_type');
    expect((await postForm(t, '/api/revoke.php', { token: tokens.body.refresh_token as string }, { authorization: basicAuth(client) })).status).toBe(200);
    expect((await introspect(jwt)).body).toEqual({ active: false });
    await expect(jwtVerify(jwt, jwks, { issuer: t.baseUrl, audience: TOOLS })).resolves.toBeDefined();
  });
});
