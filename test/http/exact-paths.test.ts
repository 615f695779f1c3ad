/**
 * The service's paths are exact: another spelling of a known path (letter case, a trailing
 * slash, percent-encoding) is 404, never served by a router that folds it, so it cannot slip
 * past the token budget or the spec glue. The exact path itself is served as usual.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
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
