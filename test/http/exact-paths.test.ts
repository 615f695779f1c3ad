/**
 * The service's paths are exact: another spelling of a known path (letter case, a trailing
 * slash, percent-encoding) is 404, never served by a router that folds it, so it cannot slip
 * past the token budget or the spec glue. The exact path itself is served as usual.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { OPENAPI_FILE } from '../../src/http/openapi-document.js';
import { createUser, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { obtainCode } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const PATHS = [
  '/api/authorize.php', '/api/token.php', '/api/userinfo.php', '/api/jwks.php', '/api/revoke.php', '/api/introspect.php',
  '/api/register.php', '/api/settings.php', '/api/webhooks.php', '/api/applications.php',
  '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration',
];
const percentLast = (path: string) => `${path.slice(0, -1)}%${path.charCodeAt(path.length - 1).toString(16)}`;
const spellings = (path: string) => [path.toUpperCase(), `${path}/`, `${path}//`, path.replace(/[a-z]/, (c) => c.toUpperCase()), percentLast(path)];

describe('exact paths', () => {
  let t: TestApp;
  let client: TestClient;
  let user: TestUser;
  beforeAll(async () => {
    t = await startTestApp({ env: { TOKEN_RATE_LIMIT_PER_MINUTE: '5' } });
    client = await registerClient(t);
    user = await createUser(t);
  });
  afterAll(async () => { await t.close(); });

  test.each(PATHS)('another spelling of %s is 404 not_found, naming the path', async (path) => {
    for (const spelling of spellings(path)) {
      for (const method of ['GET', 'POST']) {
        const res = await fetch(`${t.baseUrl}${spelling}`, { method, headers: { accept: 'application/json' }, redirect: 'manual' });
        expect({ spelling, method, status: res.status }).toEqual({ spelling, method, status: 404 });
        const body = await res.json() as Record<string, string>;
        expect(body.error).toBe('not_found');
        expect(body.error_description).toContain(path);
      }
    }
  });

  test('another spelling of an API path is answered in JSON whatever Accept says; of a page, a page to a browser', async () => {
    for (const spelling of ['/api/token.php/', '/API/Userinfo.php', '/api/revoke.php%2F']) {
      const res = await fetch(`${t.baseUrl}${spelling}`, { method: 'POST', headers: { accept: '*/*' } });
      expect({ spelling, status: res.status, type: res.headers.get('content-type') }).toEqual({ spelling, status: 404, type: expect.stringMatching(/^application\/json/) });
      expect((await res.json() as Record<string, string>).error).toBe('not_found');
    }
    const page = await fetch(`${t.baseUrl}/api/register.php/`, { headers: { accept: 'text/html,*/*;q=0.8' } });
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  });

  test('a code cannot be redeemed at /API/Token.php/ (outside the token budget and the spec glue)', async () => {
    const code = await obtainCode(t.baseUrl, client, user);
    const form = new URLSearchParams({ code, client_id: client.client_id, client_secret: client.client_secret });
    const res = await fetch(`${t.baseUrl}/API/Token.php/`, { method: 'POST', body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('ratelimit-limit')).not.toBeNull(); // it still counted
    const exact = await tokenRequest(t, Object.fromEntries(form));
    expect(exact.status).toBe(200);
    expect(exact.headers.get('ratelimit-limit')).toBe('5');
  });
});

describe('methods of the served paths', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t.close(); });

  /** The methods each path answers: the contract the 405s' Allow headers state. */
  const METHODS: Record<string, string[]> = {
    '/api/authorize.php': ['GET'], '/api/token.php': ['POST'], '/api/userinfo.php': ['GET', 'POST'], '/api/jwks.php': ['GET'],
    '/api/revoke.php': ['POST'], '/api/introspect.php': ['POST'], '/api/register.php': ['GET', 'POST'], '/api/settings.php': ['GET', 'POST'],
    '/api/webhooks.php': ['GET', 'POST', 'DELETE'], '/api/applications.php': ['GET', 'POST'], '/api/openapi.json': ['GET'],
    '/.well-known/oauth-authorization-server': ['GET'], '/.well-known/openid-configuration': ['GET'],
  };

  test.each(Object.entries(METHODS))('%s: its methods are answered, any other is 405 method_not_allowed with Allow (RFC 9110 §15.5.6)', async (path, methods) => {
    for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${t.baseUrl}${path}`, { method, headers: { accept: 'application/json' }, redirect: 'manual' });
      if (methods.includes(method)) {
        expect({ method, answered: ![404, 405].includes(res.status) }).toEqual({ method, answered: true });
        continue;
      }
      expect({ method, status: res.status }).toEqual({ method, status: 405 });
      const body = await res.json() as Record<string, string>;
      expect(body.error).toBe('method_not_allowed');
      expect(res.headers.get('allow')).toBe([...methods, ...(methods.includes('GET') ? ['HEAD'] : []), 'OPTIONS'].join(', '));
      // RFC 6749 §5.1: every answer of the token path, this refusal too, is kept out of HTTP/1.0 caches.
      if (path === '/api/token.php') expect(res.headers.get('pragma')).toBe('no-cache');
    }
  });

  test('the OpenAPI document lists the same methods for each of these paths', () => {
    const document = JSON.parse(fs.readFileSync(OPENAPI_FILE, 'utf8')) as { paths: Record<string, Record<string, unknown>> };
    for (const [path, methods] of Object.entries(METHODS)) {
      const listed = Object.keys(document.paths[path] ?? {}).filter((key) => ['get', 'post', 'put', 'delete', 'patch'].includes(key)).map((key) => key.toUpperCase());
      expect({ path, methods: listed.sort() }).toEqual({ path, methods: [...methods].sort() });
    }
  });

  test('a plain OPTIONS (not a CORS preflight) is 204 with Allow; a preflight is still the provider\'s', async () => {
    const plain = await fetch(`${t.baseUrl}/api/token.php`, { method: 'OPTIONS' });
    expect(plain.status).toBe(204);
    expect(plain.headers.get('allow')).toBe('POST, OPTIONS');
    const webhooks = await fetch(`${t.baseUrl}/api/webhooks.php`, { method: 'OPTIONS' });
    expect(webhooks.status).toBe(204);
    expect(webhooks.headers.get('allow')).toBe('GET, POST, DELETE, HEAD, OPTIONS');
    const preflight = await fetch(`${t.baseUrl}/api/token.php`, { method: 'OPTIONS', headers: { origin: 'https://spa.example', 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://spa.example');
  });
});
