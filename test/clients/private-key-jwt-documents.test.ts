/**
 * private_key_jwt with keys at a `jwks_uri`, and Client ID Metadata Documents as the clients
 * people use publish them, served over https on loopback with a throwaway CA that the service
 * trusts as operators make it (NODE_EXTRA_CA_CERTS, in the service's own process):
 *
 * - a ChatGPT-shaped document (private_key_jwt, RS256, a jwks_uri): the whole code flow, the
 *   code redeemed and refreshed with assertions signed by a key the test holds;
 * - a Claude-shaped document (a public client with PKCE);
 * - a document listing grant types the service does not offer (the JWT-bearer grant,
 *   device_code, client_credentials): narrowed, its code flow completes, client_credentials is
 *   `unauthorized_client`;
 * - a key set fetched once, then kept as its Cache-Control says; one that changes its keys: a new
 *   key works at once (one fetch more), a removed one no longer does, and unknown keys make no
 *   more than one fetch every CLIENT_JWKS_REFETCH_SECONDS;
 * - a key set that cannot be had: a clear `invalid_client` saying why; a jwks_uri on a refused
 *   address: refused at registration when it is an address, at use when a name leads there.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import { assertionForm, jwksOf, makeKey, signAssertion } from '../helpers/client-keys.js';
import type { TestKey } from '../helpers/client-keys.js';
import { startDocumentServer } from '../helpers/document-server.js';
import type { DocumentServer } from '../helpers/document-server.js';
import { pkcePair, pkceParams } from '../helpers/pkce.js';
import { startServiceProcess } from '../helpers/service-process.js';
import type { ServiceProcess } from '../helpers/service-process.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';
import { describeWithOpenssl, makeCertificates } from '../helpers/tls.js';
import type { Certificates } from '../helpers/tls.js';

const TOOLS = 'https://tools.example/mcp';

async function post(baseUrl: string, path: string, form: Record<string, string>) {
  const res = await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

async function register(baseUrl: string, body: Record<string, unknown>) {
  const res = await fetch(`${baseUrl}/api/register.php`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

describeWithOpenssl('private_key_jwt over https: key sets and metadata documents', () => {
  let tls: Certificates;
  let docs: DocumentServer;
  let service: ServiceProcess;
  beforeAll(async () => {
    tls = makeCertificates();
    docs = await startDocumentServer(tls);
    service = await startServiceProcess({
      NODE_EXTRA_CA_CERTS: tls.caFile, CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS: 'true', REGISTRATION_CLIENT_CREDENTIALS: 'true',
      CLIENT_JWKS_REFETCH_SECONDS: '2', RESOURCES: JSON.stringify([{ uri: TOOLS, scopes: 'tools:read tools:call' }]),
    });
  }, 180_000);
  afterAll(async () => {
    await service?.close();
    await docs?.close();
    tls?.remove();
  });

  const token = (form: Record<string, string>) => post(service.baseUrl, '/api/token.php', form);
  /** The log lines of `message` (the service's output is buffered: waited for, up to 3 s, until `until` holds). */
  async function logged(message: string, until: (lines: Record<string, unknown>[]) => boolean) {
    const read = () => service.instance.output.split('\n').filter((line) => line.includes(message)).map((line) => JSON.parse(line) as Record<string, unknown>);
    for (let waited = 0; waited < 3000 && !until(read()); waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    return read();
  }

  describe('a ChatGPT-shaped metadata document', () => {
    let key: TestKey;
    let clientId: string;
    const redirect = 'https://chatgpt.com/connector/oauth/c-123';
    beforeAll(async () => {
      key = await makeKey('RS256', 'chatgpt-1');
      clientId = docs.url('/oauth/c-123/client.json');
      docs.route('/oauth/c-123/client.json', {
        body: {
          client_id: clientId, client_uri: 'https://chatgpt.com/', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'], client_name: 'ChatGPT', token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'RS256',
          jwks_uri: docs.url('/oauth/jwks.json'),
        },
        headers: { 'cache-control': 'max-age=300' },
      });
      docs.route('/oauth/jwks.json', { body: jwksOf(key), headers: { 'cache-control': 'max-age=300' } });
    });

    test('the code flow to the consent page and back; the code and the refresh authenticated by assertions; its key set fetched once', async () => {
      const pkce = pkcePair();
      const browser = new Browser(service.baseUrl);
      const back = await browser.authorize({ client_id: clientId, client_secret: '', redirect_uri: redirect }, service.user, { state: 'st', ...pkceParams(pkce) });
      expect(back.origin + back.pathname).toBe(redirect);
      expect(browser.consentPage).toContain(`registered itself by publishing its description at ${clientId}`);
      expect(browser.consentPage).toContain('id="client_name">ChatGPT<');
      const assertion = () => signAssertion(key, { client: clientId, audience: service.baseUrl });
      const exchanged = await token({ code: back.searchParams.get('code')!, client_id: clientId, redirect_uri: redirect, code_verifier: pkce.verifier, ...assertionForm(await assertion()) });
      expect(exchanged.status).toBe(200);
      const refreshed = await token({ grant_type: 'refresh_token', refresh_token: exchanged.body.refresh_token as string, ...assertionForm(await assertion()) });
      expect(refreshed.status).toBe(200);
      expect(docs.hits.get('/oauth/jwks.json')).toBe(1);
      // Its document and keys vouch for nobody's machine tokens.
      const machine = await token({ grant_type: 'client_credentials', resource: TOOLS, ...assertionForm(await assertion()) });
      expect(machine).toMatchObject({ status: 400, body: { error: 'unauthorized_client' } });
      // A client that declared private_key_jwt cannot fall back to being public.
      expect((await token({ grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token as string, client_id: clientId }))).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    });

    test('an assertion with a key its set lacks: refused, the set fetched again once', async () => {
      await new Promise((resolve) => setTimeout(resolve, 2100)); // its last fetch is older than CLIENT_JWKS_REFETCH_SECONDS
      const hits = docs.hits.get('/oauth/jwks.json')!;
      const stranger = await makeKey('RS256', 'chatgpt-2');
      const res = await token({ grant_type: 'refresh_token', refresh_token: 'x', ...assertionForm(await signAssertion(stranger, { client: clientId, audience: service.baseUrl })) });
      expect(res).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
      expect(docs.hits.get('/oauth/jwks.json')).toBe(hits + 1);
    });
  });

  test('a Claude-shaped document: a public client with PKCE', async () => {
    const clientId = docs.url('/oauth/mcp-client-metadata');
    const redirect = 'https://claude.ai/api/mcp/auth_callback';
    docs.route('/oauth/mcp-client-metadata', {
      body: { client_id: clientId, client_name: 'Claude', client_uri: 'https://claude.ai', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
    });
    const pkce = pkcePair();
    const back = await new Browser(service.baseUrl).authorize({ client_id: clientId, client_secret: '', redirect_uri: redirect }, service.user, pkceParams(pkce));
    const exchanged = await token({ code: back.searchParams.get('code')!, client_id: clientId, redirect_uri: redirect, code_verifier: pkce.verifier });
    expect(exchanged.status).toBe(200);
    expect((await token({ grant_type: 'refresh_token', refresh_token: exchanged.body.refresh_token as string, client_id: clientId })).status).toBe(200);
  });

  test('a document listing grants the service does not offer: narrowed to the code flow, which completes; client_credentials is unauthorized_client', async () => {
    const clientId = docs.url('/greedy.json');
    const redirect = 'http://127.0.0.1:9999/callback';
    docs.route('/greedy.json', {
      body: {
        client_id: clientId, client_name: 'Greedy', redirect_uris: [redirect], token_endpoint_auth_method: 'none', response_types: ['code'],
        grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'urn:ietf:params:oauth:grant-type:device_code', 'client_credentials'],
      },
    });
    const pkce = pkcePair();
    const back = await new Browser(service.baseUrl).authorize({ client_id: clientId, client_secret: '', redirect_uri: redirect }, service.user, pkceParams(pkce));
    const exchanged = await token({ code: back.searchParams.get('code')!, client_id: clientId, redirect_uri: redirect, code_verifier: pkce.verifier });
    expect(exchanged.status).toBe(200);
    expect(await token({ grant_type: 'client_credentials', resource: TOOLS, client_id: clientId })).toMatchObject({ status: 400, body: { error: 'unauthorized_client' } });
  });

  test('a document without the code flow is refused, saying why', async () => {
    const clientId = docs.url('/no-code.json');
    docs.route('/no-code.json', { body: { client_id: clientId, redirect_uris: ['http://127.0.0.1:9999/callback'], response_types: [], grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: docs.url('/oauth/jwks.json') } });
    const query = new URLSearchParams({ client_id: clientId, redirect_uri: 'http://127.0.0.1:9999/callback', response_type: 'code' });
    const res = await fetch(`${service.baseUrl}/api/authorize.php?${query}`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'invalid_client_metadata', error_description: expect.stringMatching(/authorization code flow/) });
  });

  describe('an RFC 7591 client whose keys are at a jwks_uri', () => {
    let first: TestKey;
    let clientId: string;
    const ask = (assertion: string) => token({ grant_type: 'client_credentials', resource: TOOLS, ...assertionForm(assertion) });
    beforeAll(async () => {
      first = await makeKey('ES256', 'first');
      docs.route('/rotating/jwks.json', { body: jwksOf(first), headers: { 'cache-control': 'max-age=600' } });
      const registered = await register(service.baseUrl, { client_name: 'Rotating', grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: docs.url('/rotating/jwks.json') });
      expect(registered.status).toBe(201);
      clientId = registered.body.client_id as string;
    });
    const hits = () => docs.hits.get('/rotating/jwks.json') ?? 0;
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    test('fetched once, then kept as its Cache-Control says', async () => {
      for (let i = 0; i < 3; i += 1) expect((await ask(await signAssertion(first, { client: clientId, audience: service.baseUrl }))).status).toBe(200);
      expect(hits()).toBe(1);
    });

    test('a key set that changes its keys: the new key works at once, the old one no longer; unknown keys fetch it at most once every CLIENT_JWKS_REFETCH_SECONDS', async () => {
      await wait(2100); // the last fetch is older than CLIENT_JWKS_REFETCH_SECONDS
      const second = await makeKey('ES256', 'second');
      docs.route('/rotating/jwks.json', { body: jwksOf(second), headers: { 'cache-control': 'max-age=600' } });
      const before = hits();
      expect((await ask(await signAssertion(second, { client: clientId, audience: service.baseUrl }))).status).toBe(200);
      expect(hits()).toBe(before + 1);
      expect(await ask(await signAssertion(first, { client: clientId, audience: service.baseUrl }))).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
      const unknown = await makeKey('ES256', 'third');
      for (let i = 0; i < 3; i += 1) expect((await ask(await signAssertion(unknown, { client: clientId, audience: service.baseUrl }))).status).toBe(401);
      expect(hits()).toBe(before + 1); // fetched lately: no fetch for them
      // Without a kid (the MCP SDK's assertions), a rotated key is found the same way.
      await wait(2100);
      const kidless = await makeKey('ES256');
      docs.route('/rotating/jwks.json', { body: jwksOf(kidless), headers: { 'cache-control': 'max-age=600' } });
      expect((await ask(await signAssertion(kidless, { client: clientId, audience: service.baseUrl }))).status).toBe(200);
      expect(hits()).toBe(before + 2);
    });

    test('a key set that cannot be had: invalid_client, saying why; the log has the detail', async () => {
      const key = await makeKey('ES256');
      const broken = await register(service.baseUrl, { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: docs.url('/missing/jwks.json') });
      const res = await ask(await signAssertion(key, { client: broken.body.client_id as string, audience: service.baseUrl }));
      expect(res).toEqual({ status: 401, body: { error: 'invalid_client', error_description: "the client's key set (jwks_uri) cannot be used: its server answered 404, not 200" } });
      const uri = docs.url('/missing/jwks.json');
      expect(await logged('client key set fetch failed', (lines) => lines.some((line) => line.jwks_uri === uri))).toContainEqual(expect.objectContaining({ jwks_uri: uri, reason: 'its server answered 404, not 200' }));
      expect(await logged('client authentication refused', (lines) => lines.some((line) => line.client_id === broken.body.client_id))).toContainEqual(expect.objectContaining({ endpoint: 'token', detail: expect.stringContaining(uri) }));
    });
  });

  describe('without CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS', () => {
    let t: TestApp;
    beforeAll(async () => { t = await startTestApp({ env: { REGISTRATION_CLIENT_CREDENTIALS: 'true', RESOURCES: JSON.stringify([{ uri: TOOLS, scopes: 'tools:read' }]) } }); });
    afterAll(async () => { await t?.close(); });

    test('a jwks_uri at a loopback address is refused at registration; one whose name leads there, at use; neither is fetched', async () => {
      const before = docs.hits.get('/oauth/jwks.json');
      const literal = await register(t.baseUrl, { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: docs.url('/oauth/jwks.json') });
      expect(literal).toEqual({ status: 400, body: { error: 'invalid_client_metadata', error_description: expect.stringMatching(/^jwks_uri: destination not allowed: 127\.0\.0\.1 is a loopback, private or shared address/) } });
      const named = await register(t.baseUrl, { grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: docs.url('/oauth/jwks.json').replace('127.0.0.1', 'localhost') });
      expect(named.status).toBe(201);
      const key = await makeKey('RS256');
      const res = await post(t.baseUrl, '/api/token.php', { grant_type: 'client_credentials', resource: TOOLS, ...assertionForm(await signAssertion(key, { client: named.body.client_id as string, audience: t.baseUrl })) });
      expect(res).toEqual({ status: 401, body: { error: 'invalid_client', error_description: "the client's key set (jwks_uri) cannot be used: destination not allowed: localhost resolves to a loopback, private or shared address" } });
      expect(docs.hits.get('/oauth/jwks.json')).toBe(before);
    });
  });
});
