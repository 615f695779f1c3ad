/**
 * Machine clients: the client_credentials grant (RFC 6749 §4.4) for confidential clients that
 * registered it. An RFC 7591 body is recognised without redirect URIs (REGISTRATION_CLIENT_CREDENTIALS
 * on); the token is an RFC 9068 JWT for the resource named (`sub` the client, the resource's
 * declared scopes only); without a resource it is `invalid_target`. Public, metadata-document and
 * code-flow clients asking for it get `unauthorized_client`, a machine client sending a code too.
 * Its tokens are rate-limited, audited, announced to its webhooks and counted, as every token.
 * On PostgreSQL + Redis and embedded.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { Browser } from '../helpers/browser.js';
import { basicAuth, expectErrorResponse, postForm, registerClient, registerDynamicClient, tokenRequest } from '../helpers/fixtures.js';
import { startReceiver, webhooksApi } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

const TOOLS = 'https://tools.example/mcp';
const OTHER = 'https://other.example/api';
const RESOURCES = JSON.stringify([{ uri: TOOLS, scopes: 'tools:read tools:call', name: 'Tools' }, { uri: OTHER, scopes: 'api:read' }]);
/** A machine client as the MCP SDK's ClientCredentialsProvider registers it. */
const MACHINE = { client_name: 'CI job', redirect_uris: [], grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' };

describe.each<Mode>(['postgres', 'embedded'])('client_credentials (%s)', (mode) => {
  let t: TestApp;
  let machine: { client_id: string; client_secret: string; redirect_uri: string };
  beforeAll(async () => {
    t = await startTestApp({ mode, env: { REGISTRATION_CLIENT_CREDENTIALS: 'true', RESOURCES, METRICS_PORT: '0', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '100' } });
    const registered = await registerDynamicClient(t, MACHINE);
    machine = { client_id: registered.client_id, client_secret: registered.client_secret!, redirect_uri: '' };
  }, 60_000);
  afterAll(async () => { await t?.close(); });

  const machineToken = (form: Record<string, string>, client = machine) => tokenRequest(t, { grant_type: 'client_credentials', ...form }, { authorization: basicAuth(client) });

  test('registers without redirect URIs: a secret, no redirect URI, no response type; stored without a redirect URI', async () => {
    const res = await fetch(`${t.baseUrl}/api/register.php`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'Bare', grant_types: ['client_credentials'] }) });
    expect(res.status).toBe(201);
    const body = await res.json() as Record<string, unknown>;
    expect(body).toEqual({
      client_id: expect.any(String), client_secret: expect.any(String), client_secret_expires_at: 0, client_id_issued_at: expect.any(Number),
      redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'], response_types: [], application_type: 'web', client_name: 'Bare',
    });
    expect(await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: body.client_id as string } })).toMatchObject({ registration: 'rfc7591', redirectUri: null });
  });

  test('a token for the resource named: an RFC 9068 JWT whose sub is the client, with every scope the resource declares', async () => {
    const res = await machineToken({ resource: TOOLS });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 600, scope: 'tools:read tools:call' });
    expect(res.body).not.toHaveProperty('refresh_token');
    const token = res.body.access_token as string;
    expect(decodeProtectedHeader(token).typ).toBe('at+jwt');
    expect(decodeJwt(token)).toMatchObject({ iss: t.baseUrl, sub: machine.client_id, client_id: machine.client_id, aud: TOOLS, scope: 'tools:read tools:call' });
  });

  test('introspection: its own token is active and names no user; another client sees it inactive', async () => {
    const token = (await machineToken({ resource: TOOLS })).body.access_token as string;
    const own = await postForm(t, '/api/introspect.php', { token }, { authorization: basicAuth(machine) });
    expect(own.body).toEqual({
      active: true, client_id: machine.client_id, sub: machine.client_id, aud: TOOLS, scope: 'tools:read tools:call',
      exp: expect.any(Number), iat: expect.any(Number), iss: t.baseUrl, jti: expect.any(String), token_type: 'Bearer',
    });
    const other = await registerClient(t);
    expect((await postForm(t, '/api/introspect.php', { token, client_id: other.client_id, client_secret: other.client_secret })).body).toEqual({ active: false });
  });

  test('scopes are those asked that the resource declares; the client secret in the form works as well as Basic', async () => {
    const res = await tokenRequest(t, { grant_type: 'client_credentials', resource: TOOLS, scope: 'tools:read api:read openid', client_id: machine.client_id, client_secret: machine.client_secret });
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.access_token as string).scope).toBe('tools:read');
  });

  test('without a resource, or with one nobody declared: invalid_target', async () => {
    expectErrorResponse(await machineToken({}), 400, 'invalid_target');
    expect((await machineToken({})).body.error_description).toMatch(/name one with resource/);
    expectErrorResponse(await machineToken({ resource: 'https://nobody.example/' }), 400, 'invalid_target');
  });

  test('a wrong secret is invalid_client; no secret at all invalid_request', async () => {
    expectErrorResponse(await machineToken({ resource: TOOLS }, { ...machine, client_secret: 'wrong' }), 401, 'invalid_client');
    expectErrorResponse(await tokenRequest(t, { grant_type: 'client_credentials', resource: TOOLS, client_id: machine.client_id }), 400, 'invalid_request');
  });

  test('clients that did not register the grant, or cannot have it, get unauthorized_client; a machine client sending a code too', async () => {
    const spec = await registerClient(t);
    expectErrorResponse(await machineToken({ resource: TOOLS }, spec), 400, 'unauthorized_client');
    const publicClient = await registerDynamicClient(t, { redirect_uris: ['http://127.0.0.1:9999/cb'], token_endpoint_auth_method: 'none' });
    expectErrorResponse(await tokenRequest(t, { grant_type: 'client_credentials', resource: TOOLS, client_id: publicClient.client_id }), 400, 'unauthorized_client');
    // A code flow client whose registration listed client_credentials kept only what it may have.
    const both = await registerDynamicClient(t, { redirect_uris: ['https://app.example/cb'], grant_types: ['authorization_code', 'client_credentials'] });
    expect(both.grant_types).toEqual(['authorization_code', 'client_credentials']);
    const publicBoth = await fetch(`${t.baseUrl}/api/register.php`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9999/cb'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'client_credentials'] }) });
    expect((await publicBoth.json() as Record<string, unknown>).grant_types).toEqual(['authorization_code']);
    const code = await tokenRequest(t, { code: 'whatever', redirect_uri: 'https://app.example/cb' }, { authorization: basicAuth(machine) });
    expectErrorResponse(code, 400, 'unauthorized_client');
  });

  test('audited, counted, and announced to the client\'s webhooks (no user, no grant; the resource)', async () => {
    let receiver: Receiver | undefined;
    try {
      receiver = await startReceiver();
      const hook = await webhooksApi(t.baseUrl, machine, { json: { url: receiver.url('/machine'), events: ['token.issued'] } });
      expect(hook.status).toBe(201);
      expect((await machineToken({ resource: TOOLS, scope: 'tools:read' })).status).toBe(200);
      const hit = await receiver.next((h) => h.event?.type === 'token.issued', 15_000);
      expect(hit.event!.data).toEqual({ client_id: machine.client_id, client_name: 'CI job', grant_type: 'client_credentials', scope: 'tools:read', resource: TOOLS });
    } finally {
      await receiver?.close();
    }
    const row = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { clientId: machine.client_id, event: 'token.issued' }, orderBy: { id: 'desc' } });
    expect(row).toMatchObject({ actor: `client:${machine.client_id}`, userId: null, detail: { grant_type: 'client_credentials', scope: 'tools:read', resource: TOOLS } });
    const metrics = await (await fetch(`http://127.0.0.1:${t.app.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/^oauth_tokens_issued_total\{grant_type="client_credentials"\} [1-9]\d*$/m);
  });

  test('a machine client signs in to its settings page with its secret: no redirect URI there to change', async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.follow('/api/settings.php');
    const signedIn = await browser.submit(page, '/api/settings.php?action=sign_in', { client_id: machine.client_id, client_secret: machine.client_secret });
    expect(signedIn.status).toBe(200);
    expect(signedIn.body).toContain('id="no_redirect_uri"');
    expect(signedIn.body).not.toContain('name="redirect_uri"');
    const saved = await browser.submit(signedIn, '/api/settings.php?action=update_client', { client_name: 'CI job, renamed' });
    expect(saved.status).toBe(200);
    expect((await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId: machine.client_id } })).clientName).toBe('CI job, renamed');
  });
});

describe('client_credentials and the token endpoint\'s rate limit', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ env: { REGISTRATION_CLIENT_CREDENTIALS: 'true', RESOURCES, TOKEN_RATE_LIMIT_PER_MINUTE: '2' } }); });
  afterAll(async () => { await t?.close(); });

  test('the spec\'s token budget applies: the third request of a minute is 429', async () => {
    const { client_id: id, client_secret: secret } = await registerDynamicClient(t, MACHINE);
    const ask = () => tokenRequest(t, { grant_type: 'client_credentials', resource: TOOLS }, { authorization: basicAuth({ client_id: id, client_secret: secret!, redirect_uri: '' }) });
    expect((await ask()).status).toBe(200);
    expect((await ask()).status).toBe(200);
    expectErrorResponse(await ask(), 429, 'too_many_requests');
  });
});
