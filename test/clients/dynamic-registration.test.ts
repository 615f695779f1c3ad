/**
 * RFC 7591 registration at /api/register.php (the `registration_endpoint` of both discovery
 * documents): a JSON body with `redirect_uris` registers a confidential client (a secret, shown
 * once) or a public one (none); the answer is §3.2.1's; a list naming what the service does not
 * offer (grant types, response types) is narrowed to what it does, and the answer says what was
 * registered; every refusal is §3.2.2's code in the spec's error body, and leaves nothing
 * registered. REGISTRATION_INITIAL_ACCESS_TOKEN, when set, is required as a Bearer token.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { hashClientSecret } from '../../src/clients/credentials.js';
import { Browser } from '../helpers/browser.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeAll(async () => { t = await startTestApp(); });
afterAll(async () => { await t?.close(); });

async function register(app: TestApp, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${app.baseUrl}/api/register.php`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, unknown> };
}

const count = () => t.app.db.prisma.client.count();

describe('POST /api/register.php with redirect_uris (RFC 7591)', () => {
  test('a confidential client (the default, client_secret_basic): §3.2.1 answer, secret once, stored as a digest, audited', async () => {
    const res = await register(t, { redirect_uris: ['https://app.example/cb', 'https://app.example/other'], client_name: 'Dynamic App', software_id: 'ignored' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({
      client_id: expect.stringMatching(/^[\w-]{22}$/),
      client_secret: expect.stringMatching(/^[\w-]{43}$/),
      client_secret_expires_at: 0,
      client_id_issued_at: expect.any(Number),
      redirect_uris: ['https://app.example/cb', 'https://app.example/other'],
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      application_type: 'web',
      client_name: 'Dynamic App',
    });
    expect(Math.abs((res.body.client_id_issued_at as number) - Date.now() / 1000)).toBeLessThan(60);
    const row = await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: res.body.client_id as string } });
    expect(row).toMatchObject({ registration: 'rfc7591', clientSecretHash: hashClientSecret(res.body.client_secret as string), clientName: 'Dynamic App', redirectUri: 'https://app.example/cb' });
    const audit = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { clientId: row.clientId } });
    expect(audit).toMatchObject({ event: 'client.registered', actor: 'anonymous', detail: expect.objectContaining({ registration: 'rfc7591', token_endpoint_auth_method: 'client_secret_basic' }) });
    expect(JSON.stringify(audit.detail)).not.toContain(res.body.client_secret as string);
  });

  test('a public client (none): no secret; all the metadata as registered; a client without a name is named by its id', async () => {
    const metadata = {
      redirect_uris: ['http://127.0.0.1/callback', 'com.example.app:/oauth'], token_endpoint_auth_method: 'none', application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: 'tools:read tools:call',
      client_uri: 'https://app.example/', logo_uri: 'https://app.example/logo.png', policy_uri: 'https://app.example/privacy', tos_uri: 'https://app.example/terms',
    };
    const res = await register(t, metadata);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ client_id: expect.any(String), client_id_issued_at: expect.any(Number), ...metadata });
    const row = await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: res.body.client_id as string } });
    expect(row).toMatchObject({ clientSecretHash: null, clientName: res.body.client_id, metadata });
  });

  test.each<[string, Record<string, unknown>, string, RegExp]>([
    ['no redirect URI', { redirect_uris: [] }, 'invalid_redirect_uri', /non-empty array/],
    ['a redirect URI that is not a string', { redirect_uris: [42] }, 'invalid_redirect_uri', /non-empty array/],
    ['http on a public host (web)', { redirect_uris: ['http://app.example/cb'] }, 'invalid_redirect_uri', /http:\/\/app\.example\/cb: a redirect URI must use https/],
    ['a fragment', { redirect_uris: ['https://app.example/cb#x'] }, 'invalid_redirect_uri', /fragment/],
    ['a private-use scheme for a web client', { redirect_uris: ['com.example.app:/cb'] }, 'invalid_redirect_uri', /https/],
    ['a scheme not named after a domain (native)', { application_type: 'native', redirect_uris: ['myapp:/cb'] }, 'invalid_redirect_uri', /private-use scheme/],
    ['javascript: (native)', { application_type: 'native', redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri', /private-use scheme/],
    ['a native http URI off loopback', { application_type: 'native', redirect_uris: ['http://app.example/cb'] }, 'invalid_redirect_uri', /loopback host/],
    ['an unknown application type', { application_type: 'desktop', redirect_uris: ['https://app.example/cb'] }, 'invalid_client_metadata', /application_type must be web or native/],
    ['an unknown authentication method', { redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'tls_client_auth' }, 'invalid_client_metadata', /client_secret_basic, client_secret_post, private_key_jwt or none/],
    ['client_secret_jwt (a key would derive from a stored digest)', { redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'client_secret_jwt' }, 'invalid_client_metadata', /client_secret_jwt is not offered/],
    ['private_key_jwt without keys', { redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata', /exactly one of jwks and jwks_uri/],
    ['only the password grant: nothing usable remains', { redirect_uris: ['https://app.example/cb'], grant_types: ['password'] }, 'invalid_client_metadata', /nothing this service offers remains/],
    ['refresh without the code grant', { redirect_uris: ['https://app.example/cb'], grant_types: ['refresh_token'] }, 'invalid_client_metadata', /must include authorization_code/],
    ['only the token response type: no code flow remains', { redirect_uris: ['https://app.example/cb'], response_types: ['token'] }, 'invalid_client_metadata', /nothing this service offers remains/],
    ['client_credentials while self-registration of it is off', { grant_types: ['client_credentials'] }, 'invalid_client_metadata', /not open to self-registration/],
    ['client_credentials for a public client', { grant_types: ['client_credentials'], token_endpoint_auth_method: 'none' }, 'invalid_client_metadata', /public client .* cannot use client_credentials/],
    ['an http logo', { redirect_uris: ['https://app.example/cb'], logo_uri: 'http://app.example/logo.png' }, 'invalid_client_metadata', /logo_uri must be an https URL/],
    ['a name with a direction override', { redirect_uris: ['https://app.example/cb'], client_name: 'evil\u202Eppa' }, 'invalid_client_metadata', /text-direction/],
    ['a scope with a double space', { redirect_uris: ['https://app.example/cb'], scope: 'a  b' }, 'invalid_client_metadata', /scope/],
  ])('%s: 400 with the code of RFC 7591 §3.2.2, nothing registered', async (_label, body, code, description) => {
    const before = await count();
    const res = await register(t, body);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ error: code, error_description: expect.stringMatching(description) });
    expect(await count()).toBe(before);
  });

  test('lists naming what the service does not offer are narrowed to what it does; the answer says what was registered', async () => {
    const res = await register(t, {
      redirect_uris: ['https://app.example/cb'], client_name: 'Greedy',
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'urn:ietf:params:oauth:grant-type:device_code', 'implicit', 'client_credentials'],
      response_types: ['code', 'token', 'code id_token'],
    });
    expect(res.status).toBe(201);
    // client_credentials too: self-registration of it is off here (REGISTRATION_CLIENT_CREDENTIALS).
    expect(res.body).toMatchObject({ grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic' });
    const row = await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: res.body.client_id as string } });
    expect(row.metadata).toMatchObject({ grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] });
  });

  test('a body is RFC 7591\'s by any of its own members: without redirect_uris it is not taken for the spec\'s shape', async () => {
    for (const body of [{ grant_types: ['authorization_code'] }, { token_endpoint_auth_method: 'none' }, { jwks_uri: 'https://app.example/jwks.json' }, { jwks: { keys: [] } }]) {
      const res = await register(t, { client_name: 'No redirect', ...body });
      expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 400, error: 'invalid_redirect_uri' });
    }
  });

  test('the spec\'s own JSON shape is unchanged: redirect_uri (singular) registers as before', async () => {
    const res = await register(t, { client_name: 'Spec App', redirect_uri: 'https://spec.example/cb' });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body)).toEqual(['client_id', 'client_secret', 'client_name', 'redirect_uri']);
    expect((await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: res.body.client_id as string } })).registration).toBe('spec');
  });
});

describe('discovery', () => {
  test.each(['oauth-authorization-server', 'openid-configuration'])('/.well-known/%s names the registration endpoint and public clients', async (name) => {
    const metadata = await (await fetch(`${t.baseUrl}/.well-known/${name}`)).json() as Record<string, unknown>;
    expect(metadata.registration_endpoint).toBe(`${t.baseUrl}/api/register.php`);
    expect(metadata.token_endpoint_auth_methods_supported).toEqual(['client_secret_post', 'client_secret_basic', 'private_key_jwt', 'none']);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
  });
});

describe('REGISTRATION_INITIAL_ACCESS_TOKEN', () => {
  const TOKEN = 'initial-access-token-of-at-least-32-chars';
  let guarded: TestApp;
  beforeAll(async () => { guarded = await startTestApp({ env: { REGISTRATION_INITIAL_ACCESS_TOKEN: TOKEN } }); });
  afterAll(async () => { await guarded?.close(); });

  test('required as a Bearer token: none or a wrong one is 401 invalid_token with its challenge; the right one registers', async () => {
    const body = { redirect_uris: ['https://app.example/cb'] };
    const without = await register(guarded, body);
    expect(without.status).toBe(401);
    expect(without.body).toEqual({ error: 'invalid_token', error_description: expect.stringContaining('initial access token') });
    expect(without.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    expect((await register(guarded, body, { authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    expect(await guarded.app.db.prisma.client.count()).toBe(0);
    expect((await register(guarded, body, { authorization: `Bearer ${TOKEN}` })).status).toBe(201);
  });

  test('locks the spec\'s JSON shape too: 401 invalid_token without the token, 201 with it', async () => {
    const body = { client_name: 'Spec', redirect_uri: 'https://spec.example/cb' };
    const without = await register(guarded, body);
    expect(without.status).toBe(401);
    expect(without.body).toEqual({ error: 'invalid_token', error_description: expect.stringContaining('initial access token') });
    expect(without.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    expect((await register(guarded, body, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect(await guarded.app.db.prisma.client.count({ where: { registration: 'spec' } })).toBe(0);
    expect((await register(guarded, body, { authorization: `Bearer ${TOKEN}` })).status).toBe(201);
  });

  test('locks the registration page: it asks for the token, and registers nothing without it', async () => {
    const browser = new Browser(guarded.baseUrl);
    const page = await browser.follow('/api/register.php');
    expect(page.body).toContain('id="registration_locked"');
    expect(page.body).toContain('name="initial_access_token"');
    const before = await guarded.app.db.prisma.client.count();
    for (const token of ['', 'wrong', TOKEN.toUpperCase()]) {
      const refused = await browser.submit(page, '/api/register.php', { client_name: 'Form', redirect_uri: 'https://form.example/cb', initial_access_token: token });
      expect(refused.status).toBe(401);
      expect(refused.body).toContain('Registration is closed to the public');
      expect(refused.body).toContain('value="https://form.example/cb"'); // what was typed stays
    }
    expect(await guarded.app.db.prisma.client.count()).toBe(before);
    const registered = await browser.submit(page, '/api/register.php', { client_name: 'Form', redirect_uri: 'https://form.example/cb', initial_access_token: TOKEN });
    expect(registered.status).toBe(201);
    expect(registered.body).toContain('id="client_secret"');
  });

  test('an open service\'s page asks for no token', async () => {
    const page = await new Browser(t.baseUrl).follow('/api/register.php');
    expect(page.body).not.toContain('initial_access_token');
  });
});
