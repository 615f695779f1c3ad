/**
 * GET /api/authorize.php: untrusted client or redirect_uri → an error page (or JSON when asked)
 * and never a redirect; once both are trusted, errors go back to the client in the query.
 * @see RFC 6749 §4.1.2.1
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createUser, expectErrorResponse, registerClient } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';
import type { TestClient } from '../helpers/browser.js';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('GET /api/authorize.php', () => {
  let t: TestApp;
  let client: TestClient;
  beforeAll(async () => {
    t = await startTestApp();
    client = await registerClient(t, 'https://client.example.com/callback');
    await createUser(t);
  });
  afterAll(async () => { await t.close(); });

  const authorize = (params: Record<string, string>, accept = BROWSER_ACCEPT) =>
    fetch(`${t.baseUrl}/api/authorize.php?${new URLSearchParams(params)}`, { headers: { accept }, redirect: 'manual' });

  test('a valid request without a session goes to the login page', async () => {
    const res = await authorize({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toMatch(/^\/interaction\/[\w-]+$|\/interaction\/[\w-]+$/);
  });

  describe.each([
    ['missing client_id', (c: TestClient) => ({ redirect_uri: c.redirect_uri, response_type: 'code' }), 400, 'invalid_request'],
    ['unknown client_id', (c: TestClient) => ({ client_id: 'no-such-client', redirect_uri: c.redirect_uri, response_type: 'code' }), 401, 'invalid_client'],
    ['malformed client_id', (c: TestClient) => ({ client_id: 'bad id\u0000é', redirect_uri: c.redirect_uri, response_type: 'code' }), 400, 'invalid_request'],
    ['missing redirect_uri', (c: TestClient) => ({ client_id: c.client_id, response_type: 'code' }), 400, 'invalid_request'],
    ['empty redirect_uri', (c: TestClient) => ({ client_id: c.client_id, redirect_uri: '', response_type: 'code' }), 400, 'invalid_request'],
    ['another redirect_uri', (c: TestClient) => ({ client_id: c.client_id, redirect_uri: 'https://evil.example.com/callback', response_type: 'code' }), 400, 'invalid_request'],
    ['redirect_uri with a trailing slash', (c: TestClient) => ({ client_id: c.client_id, redirect_uri: `${c.redirect_uri}/`, response_type: 'code' }), 400, 'invalid_request'],
    ['redirect_uri with an extra query', (c: TestClient) => ({ client_id: c.client_id, redirect_uri: `${c.redirect_uri}?next=/x`, response_type: 'code' }), 400, 'invalid_request'],
    ['repeated client_id', (c: TestClient) => new URLSearchParams([['client_id', c.client_id], ['client_id', c.client_id], ['redirect_uri', c.redirect_uri], ['response_type', 'code']]), 400, 'invalid_request'],
  ])('%s: never redirects', (_name, params, status, error) => {
    const query = (c: TestClient) => new URLSearchParams(params(c) as Record<string, string>).toString();

    test(`a browser gets a ${status} page naming ${error}`, async () => {
      const res = await fetch(`${t.baseUrl}/api/authorize.php?${query(client)}`, { headers: { accept: BROWSER_ACCEPT }, redirect: 'manual' });
      expect(res.status).toBe(status);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(await res.text()).toContain(`<code id="error">${error}</code>`);
    });

    test('a request preferring JSON gets the JSON error body', async () => {
      const res = await fetch(`${t.baseUrl}/api/authorize.php?${query(client)}`, { headers: { accept: 'application/json' }, redirect: 'manual' });
      expect(res.headers.get('location')).toBeNull();
      expectErrorResponse({ status: res.status, headers: res.headers, body: await res.json() as Record<string, unknown> }, status, error);
    });
  });

  describe.each([
    ['unsupported response_type', { response_type: 'token' }, 'unsupported_response_type'],
    ['unknown response_type', { response_type: 'foo' }, 'unsupported_response_type'],
    ['missing response_type', {}, 'invalid_request'],
    ['plain PKCE', { response_type: 'code', code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }, 'invalid_request'],
    ['PKCE challenge without method', { response_type: 'code', code_challenge: 'a'.repeat(43) }, 'invalid_request'],
    ['too short PKCE challenge', { response_type: 'code', code_challenge: 'abc', code_challenge_method: 'S256' }, 'invalid_request'],
  ])('%s with a trusted client and redirect_uri', (_name, extra, error) => {
    test(`redirects to the client with ?error=${error}&state=…`, async () => {
      const res = await authorize({ client_id: client.client_id, redirect_uri: client.redirect_uri, state: 'st-1', ...extra });
      expect(res.status).toBe(303);
      const location = new URL(res.headers.get('location')!);
      expect(`${location.origin}${location.pathname}`).toBe(client.redirect_uri);
      expect(location.hash).toBe('');
      expect(location.searchParams.get('error')).toBe(error);
      expect(location.searchParams.get('state')).toBe('st-1');
      expect(location.searchParams.get('iss')).toBe(t.baseUrl);
    });
  });

  test('an error moved from the fragment to the query: the body names the URL Location names', async () => {
    const res = await authorize({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'token', state: 'st-2' }, 'text/plain');
    const location = res.headers.get('location')!;
    expect(location).toContain('?error=unsupported_response_type');
    expect(await res.text()).toBe(`Redirecting to ${location}.`);
  });

  test('an error the provider sends back without a description gets one (a request object)', async () => {
    const res = await authorize({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', request: 'eyJ0eXAiOiJKV1QifQ.e30.', state: 'st-4' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect([...location.searchParams.keys()]).toEqual(['error', 'error_description', 'state', 'iss']);
    expect(location.searchParams.get('error')).toBe('request_not_supported');
    expect(location.searchParams.get('error_description')).toMatch(/request object/);
    expect(location.searchParams.get('state')).toBe('st-4');
  });

  test('a client that asks for response_mode=fragment gets its answer in the fragment (OAuth 2.0 Multiple Response Type Encoding Practices)', async () => {
    const res = await authorize({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'token', response_mode: 'fragment', state: 'st-3' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect(location.search).toBe('');
    expect(new URLSearchParams(location.hash.slice(1)).get('error')).toBe('unsupported_response_type');
    const described = await authorize({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', response_mode: 'fragment', request: 'eyJ0eXAiOiJKV1QifQ.e30.' });
    const fragment = new URLSearchParams(new URL(described.headers.get('location')!).hash.slice(1));
    expect([fragment.get('error'), fragment.get('error_description')]).toEqual(['request_not_supported', expect.stringMatching(/request object/)]);
  });

  test('a response_mode that does not exist: the error goes back in the query', async () => {
    const res = await authorize({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'token', response_mode: 'bogus', state: 'st-5' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect(location.hash).toBe('');
    expect(location.searchParams.get('error')).toEqual(expect.stringMatching(/^unsupported_response_(type|mode)$/));
    expect(location.searchParams.get('state')).toBe('st-5');
  });

  test('HEAD is read as GET: a missing redirect_uri is refused, never redirected', async () => {
    const res = await fetch(`${t.baseUrl}/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, response_type: 'code' })}`, { method: 'HEAD', redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });
});
