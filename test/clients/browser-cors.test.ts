/**
 * CORS for browser apps (http/cors.ts): RFC 7591 registration from any origin; the token,
 * userinfo and revocation endpoints from a public client's redirect origin only, never for a
 * confidential client; our own errors on those paths (a form we cannot read, a spent rate limit)
 * readable by the page that caused them, and the provider's refusal of a foreign origin kept.
 * Requests without Origin (every non-browser client) see no CORS header at all.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import type { TestUser } from '../helpers/browser.js';
import { basicAuth, createUser, expectErrorResponse, obtainTokens, registerClient, registerDynamicClient, tokenRequest } from '../helpers/fixtures.js';
import { pkcePair, pkceParams } from '../helpers/pkce.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const ORIGIN = 'https://spa.example';
const REDIRECT = `${ORIGIN}/callback`;
const FOREIGN = 'https://elsewhere.example';

const corsHeaders = (headers: Headers) => Object.fromEntries([...headers].filter(([name]) => name.startsWith('access-control-')));

let t: TestApp;
let user: TestUser;
beforeAll(async () => {
  t = await startTestApp();
  user = await createUser(t);
});
afterAll(async () => { await t?.close(); });

const register = (metadata: Record<string, unknown>, headers: Record<string, string> = {}) => fetch(`${t.baseUrl}/api/register.php`, {
  method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(metadata),
});

describe('registration (RFC 7591) from a page', () => {
  test('the preflight is answered for any origin: POST, the headers asked, no credentials', async () => {
    const res = await fetch(`${t.baseUrl}/api/register.php`, {
      method: 'OPTIONS',
      headers: { Origin: FOREIGN, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' },
    });
    expect(res.status).toBe(204);
    expect(corsHeaders(res.headers)).toEqual({
      'access-control-allow-origin': FOREIGN,
      'access-control-allow-methods': 'POST',
      'access-control-allow-headers': 'authorization,content-type',
      'access-control-max-age': '3600',
      'access-control-expose-headers': 'WWW-Authenticate, Retry-After',
    });
    expect(res.headers.get('vary')).toMatch(/Origin/);
  });

  test('a registration and a refusal are both readable by the page', async () => {
    const created = await register({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }, { Origin: ORIGIN });
    expect(created.status).toBe(201);
    expect(created.headers.get('access-control-allow-origin')).toBe(ORIGIN);

    const refused = await register({ redirect_uris: ['not a uri'], token_endpoint_auth_method: 'none' }, { Origin: ORIGIN });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(await refused.json()).toMatchObject({ error: 'invalid_redirect_uri' });
  });

  test('without Origin, and for the page itself, nothing changes', async () => {
    const spec = await register({ client_name: 'Spec App', redirect_uri: 'https://app.example/cb' });
    expect(spec.status).toBe(201);
    expect(corsHeaders(spec.headers)).toEqual({});

    const page = await fetch(`${t.baseUrl}/api/register.php`, { headers: { Origin: FOREIGN } });
    expect(page.status).toBe(200);
    expect(corsHeaders(page.headers)).toEqual({});

    const plainOptions = await fetch(`${t.baseUrl}/api/register.php`, { method: 'OPTIONS' });
    expect(plainOptions.status).toBe(204);
    expect(plainOptions.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    expect(corsHeaders(plainOptions.headers)).toEqual({});
  });
});

describe('a public client in the page', () => {
  let clientId: string;
  beforeAll(async () => {
    ({ client_id: clientId } = await registerDynamicClient(t, {
      redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'],
    }));
  });

  test('its redirect origin reads the tokens, userinfo and revocation; another origin is refused', async () => {
    const pkce = pkcePair();
    const code = (await new Browser(t.baseUrl).authorize({ client_id: clientId, client_secret: '', redirect_uri: REDIRECT }, user, pkceParams(pkce))).searchParams.get('code')!;
    const tokens = await tokenRequest(t, { code, client_id: clientId, code_verifier: pkce.verifier, redirect_uri: REDIRECT }, { Origin: ORIGIN });
    expect(tokens.status).toBe(200);
    expect(tokens.headers.get('access-control-allow-origin')).toBe(ORIGIN);

    const info = await fetch(`${t.baseUrl}/api/userinfo.php`, { headers: { Origin: ORIGIN, authorization: `Bearer ${String(tokens.body.access_token)}` } });
    expect(info.status).toBe(200);
    expect(info.headers.get('access-control-allow-origin')).toBe(ORIGIN);

    const foreign = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: String(tokens.body.refresh_token), client_id: clientId }, { Origin: FOREIGN });
    expectErrorResponse(foreign, 400, 'invalid_request');
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();

    const revoked = await fetch(`${t.baseUrl}/api/revoke.php`, {
      method: 'POST',
      headers: { Origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: String(tokens.body.refresh_token), client_id: clientId }),
    });
    expect(revoked.status).toBe(200);
    expect(revoked.headers.get('access-control-allow-origin')).toBe(ORIGIN);
  });

  test('an error answered before the provider is readable by the page', async () => {
    const res = await tokenRequest(t, { grant_type: 'authorization_code', client_id: clientId, code_verifier: 'v'.repeat(43) }, { Origin: ORIGIN });
    expectErrorResponse(res, 400, 'invalid_request');
    expect(res.body.error_description).toBe("missing required parameter 'code'");
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
  });
});

test('a confidential client is never answered to a page, even from its redirect origin', async () => {
  const client = await registerClient(t, REDIRECT);
  const tokens = await obtainTokens(t, client, user);
  const res = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token) }, { Origin: ORIGIN, authorization: basicAuth(client) });
  expectErrorResponse(res, 400, 'invalid_request');
  expect(res.headers.get('access-control-allow-origin')).toBeNull();
});

test('a spent rate limit is readable by the page, Retry-After too', async () => {
  const limited = await startTestApp({ env: { TOKEN_RATE_LIMIT_PER_MINUTE: '1' } });
  try {
    const send = () => fetch(`${limited.baseUrl}/api/token.php`, {
      method: 'POST', headers: { Origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=authorization_code&code=x&client_id=spa',
    });
    await send();
    const res = await send();
    expect(res.status).toBe(429);
    expect(corsHeaders(res.headers)).toMatchObject({ 'access-control-allow-origin': ORIGIN, 'access-control-expose-headers': 'WWW-Authenticate, Retry-After' });
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  } finally {
    await limited.close();
  }
});
