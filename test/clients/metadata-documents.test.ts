/**
 * Client ID Metadata Documents: a client_id that is an https URL is fetched (through the
 * outbound guard), cached as its Cache-Control says, checked and used: the flow completes with
 * PKCE as a public client. Refusals are clear errors, never 5xx or redirects, and register
 * nothing: a document whose client_id differs from its URL, one too large, one too slow, one
 * that is not there or not JSON, one for a confidential client or with an http redirect URI off
 * loopback, and any document on a private address without CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS.
 *
 * The documents are served over https on loopback with a throwaway CA, which the service trusts
 * as operators make it trust one: NODE_EXTRA_CA_CERTS, in the service's own process.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { decodeJwt } from 'jose';
import { Browser } from '../helpers/browser.js';
import { startDocumentServer } from '../helpers/document-server.js';
import type { DocumentServer } from '../helpers/document-server.js';
import { pkcePair, pkceParams } from '../helpers/pkce.js';
import { startServiceProcess } from '../helpers/service-process.js';
import { freePort } from '../helpers/services.js';
import type { ServiceProcess } from '../helpers/service-process.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';
import { describeWithOpenssl, makeCertificates } from '../helpers/tls.js';
import type { Certificates } from '../helpers/tls.js';

const REDIRECT = 'http://127.0.0.1:9999/callback';
describeWithOpenssl('Client ID Metadata Documents', () => {
  let tls: Certificates;
  let docs: DocumentServer;
  let service: ServiceProcess;
  const document = (path: string, extra: Record<string, unknown> = {}) => ({
    client_id: docs.url(path), client_name: 'Metadata Client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], ...extra,
  });

  beforeAll(async () => {
    tls = makeCertificates();
    docs = await startDocumentServer(tls);
    service = await startServiceProcess({ NODE_EXTRA_CA_CERTS: tls.caFile, CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS: 'true', CLIENT_METADATA_TIMEOUT_MS: '1500', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    docs.route('/logout.json', { body: document('/logout.json', { post_logout_redirect_uris: ['http://127.0.0.1:9999/bye'], backchannel_logout_uri: docs.url('/doc-logout') }) });
    docs.route('/doc-logout', { body: '' });
    docs.route('/logout-http.json', { body: document('/logout-http.json', { post_logout_redirect_uris: ['http://app.example/bye'] }) });
    docs.route('/good.json', { body: document('/good.json'), headers: { 'cache-control': 'max-age=300' } });
    docs.route('/mismatch.json', { body: document('/other.json') });
    docs.route('/large.json', { body: document('/large.json', { client_name: 'x'.repeat(6000) }) }); // streamed: no Content-Length
    const declared = JSON.stringify(document('/declared.json', { client_name: 'x'.repeat(6000) }));
    docs.route('/declared.json', { body: declared, headers: { 'content-length': String(Buffer.byteLength(declared)) } });
    docs.route('/slow.json', { body: document('/slow.json'), delayMs: 4000 });
    docs.route('/confidential.json', { body: document('/confidential.json', { token_endpoint_auth_method: 'client_secret_basic' }) });
    docs.route('/http.json', { body: document('/http.json', { redirect_uris: ['http://app.example/cb'] }) });
    docs.route('/not-json.json', { body: '<html>hello</html>' });
  }, 180_000);
  afterAll(async () => {
    await service?.close();
    await docs?.close();
    tls?.remove();
  });

  const clientCount = async () => {
    const db = new pg.Client({ connectionString: service.database.url });
    await db.connect();
    try {
      return Number((await db.query('SELECT count(*) FROM clients')).rows[0].count);
    } finally {
      await db.end();
    }
  };

  test('discovery says client_id_metadata_document_supported', async () => {
    const metadata = await (await fetch(`${service.baseUrl}/.well-known/oauth-authorization-server`)).json() as Record<string, unknown>;
    expect(metadata.client_id_metadata_document_supported).toBe(true);
  });

  test('a document on loopback (trusted through NODE_EXTRA_CA_CERTS): the code flow with PKCE as a public client; fetched once, then cached', async () => {
    const clientId = docs.url('/good.json');
    const pkce = pkcePair();
    const browser = new Browser(service.baseUrl);
    const redirect = await browser.authorize({ client_id: clientId, client_secret: '', redirect_uri: REDIRECT }, service.user, pkceParams(pkce));
    // The consent page names the document the client is known by, and where the answer goes.
    expect(browser.consentPage).toContain(`This application registered itself by publishing its description at ${clientId}`);
    expect(browser.consentPage).toContain('id="client_name">Metadata Client<');
    expect(browser.consentPage).toContain('Your answer is sent to 127.0.0.1:9999.');
    const code = redirect.searchParams.get('code');
    expect(code).toBeTruthy();
    const token = await fetch(`${service.baseUrl}/api/token.php`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ code: code!, client_id: clientId, code_verifier: pkce.verifier }),
    });
    expect(token.status).toBe(200);
    const tokens = await token.json() as Record<string, string>;
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const refreshed = await fetch(`${service.baseUrl}/api/token.php`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId }),
    });
    expect(refreshed.status).toBe(200);
    expect(docs.hits.get('/good.json')).toBe(1); // max-age=300: every later use came from the cache
    // The user sees it among their applications, by its URL, and can revoke it.
    const apps = await browser.request('/api/applications.php');
    expect(apps.body).toContain(`data-client-id="${clientId}"`);
    expect(await clientCount()).toBe(0); // a document's client is not registered: the document is the registration
  });

  test.each<[string, string, string, RegExp]>([
    ['a client_id that differs from its URL', '/mismatch.json', 'invalid_client_metadata', /client_id does not match/],
    ['a document over CLIENT_METADATA_MAX_BYTES', '/large.json', 'invalid_client', /fetch failed: the document is larger than 5120 bytes/],
    ['a document whose Content-Length is over CLIENT_METADATA_MAX_BYTES', '/declared.json', 'invalid_client', /fetch failed: the document is larger than 5120 bytes/],
    ['a document slower than CLIENT_METADATA_TIMEOUT_MS', '/slow.json', 'invalid_client', /fetch failed: no complete answer within 1500 ms/],
    ['a document that is not there', '/missing.json', 'invalid_client', /fetch failed: its server answered 404, not 200/],
    ['a document that is not JSON', '/not-json.json', 'invalid_client', /fetch failed: the document is not JSON/],
    ['a confidential client', '/confidential.json', 'invalid_client_metadata', /shared-secret/],
    ['a web redirect URI over http off loopback', '/http.json', 'invalid_client_metadata', /redirect URI http:\/\/app\.example\/cb is refused: redirect_uri must use https/],
    ['a web post-logout redirect URI over http off loopback', '/logout-http.json', 'invalid_client_metadata', /post_logout_redirect_uri http:\/\/app\.example\/bye is refused/],
  ])('%s: a clear error, not redirected, nothing registered; fetched once', async (_label, path, code, description) => {
    const before = docs.hits.get(path) ?? 0;
    const query = new URLSearchParams({ client_id: docs.url(path), redirect_uri: REDIRECT, response_type: 'code', ...pkceParams(pkcePair()) });
    const res = await fetch(`${service.baseUrl}/api/authorize.php?${query}`, { headers: { accept: 'application/json' }, redirect: 'manual' });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.json()).toEqual({ error: code, error_description: expect.stringMatching(description) });
    expect(await clientCount()).toBe(0);
    expect(docs.hits.get(path)).toBe(before + 1); // not again to render the error
  }, 30_000);

  test('a document\'s logout URIs: RP-initiated logout sends the user back to its post_logout_redirect_uri, its backchannel_logout_uri gets the logout token', async () => {
    const clientId = docs.url('/logout.json');
    const pkce = pkcePair();
    const browser = new Browser(service.baseUrl);
    const redirect = await browser.authorize({ client_id: clientId, client_secret: '', redirect_uri: REDIRECT }, service.user, pkceParams(pkce));
    const token = await fetch(`${service.baseUrl}/api/token.php`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ code: redirect.searchParams.get('code')!, client_id: clientId, code_verifier: pkce.verifier }),
    });
    const { id_token: idToken } = await token.json() as Record<string, string>;
    const page = await browser.follow(`/api/logout.php?${new URLSearchParams({ id_token_hint: idToken!, post_logout_redirect_uri: 'http://127.0.0.1:9999/bye', state: 'doc' })}`);
    expect(page.status).toBe(200);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)![1]!;
    const confirmed = await browser.request('/api/logout.php/confirm', { form: { xsrf, logout: 'yes' } });
    expect(confirmed.location).toBe('http://127.0.0.1:9999/bye?state=doc');
    // Its https receiver (trusted through NODE_EXTRA_CA_CERTS, as the document is) gets the token.
    while (!docs.posted.get('/doc-logout')?.length) await new Promise((resolve) => setTimeout(resolve, 20));
    const [body] = docs.posted.get('/doc-logout')!;
    expect(decodeJwt(new URLSearchParams(body).get('logout_token')!)).toMatchObject({ aud: clientId, sid: decodeJwt(idToken!).sid });
  });

  test('a document whose server cannot be reached: the page says so and no more (no probe of host and port); the log has the network\'s words and the request id', async () => {
    const closed = await freePort();
    const query = new URLSearchParams({ client_id: `https://127.0.0.1:${closed}/client.json`, redirect_uri: REDIRECT, response_type: 'code', ...pkceParams(pkcePair()) });
    const res = await fetch(`${service.baseUrl}/api/authorize.php?${query}`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(401);
    const body = await res.json() as { error_description: string };
    expect(body).toEqual({ error: 'invalid_client', error_description: `client_id metadata document fetch failed: 127.0.0.1:${closed} could not be reached` });
    expect(body.error_description).not.toMatch(/ECONN|connect /);
    const requestId = res.headers.get('x-request-id')!;
    const logged = () => service.instance.output.split('\n').filter((line) => line.includes('metadata document fetch failed')).map((line) => JSON.parse(line) as Record<string, unknown>);
    for (let waited = 0; waited < 3000 && !logged().some((line) => line.request_id === requestId); waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(logged()).toContainEqual(expect.objectContaining({ request_id: requestId, detail: expect.stringContaining('ECONNREFUSED') }));
  });

  describe('without CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS', () => {
    let t: TestApp;
    beforeAll(async () => { t = await startTestApp(); });
    afterAll(async () => { await t?.close(); });

    test('a document on a loopback address is never fetched', async () => {
      const before = docs.hits.get('/good.json');
      const query = new URLSearchParams({ client_id: docs.url('/good.json'), redirect_uri: REDIRECT, response_type: 'code', ...pkceParams(pkcePair()) });
      const res = await fetch(`${t.baseUrl}/api/authorize.php?${query}`, { headers: { accept: 'application/json' } });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: 'invalid_client', error_description: 'client_id metadata document fetch failed: destination not allowed: 127.0.0.1 is a loopback, private or shared address' });
      expect(docs.hits.get('/good.json')).toBe(before);
    });

    test('a client_id that is an http URL, or an https URL without a path, names no client', async () => {
      for (const clientId of ['http://127.0.0.1/client.json', 'https://client.example']) {
        const query = new URLSearchParams({ client_id: clientId, redirect_uri: REDIRECT, response_type: 'code' });
        const res = await fetch(`${t.baseUrl}/api/authorize.php?${query}`, { headers: { accept: 'application/json' } });
        expect({ clientId, status: res.status, body: await res.json() }).toEqual({ clientId, status: 400, body: { error: 'invalid_request', error_description: 'client_id is malformed' } });
      }
    });
  });
});
