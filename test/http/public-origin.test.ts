/**
 * Every URL the service publishes derives from BASE_URL alone (src/http/access-log.ts publicOrigin, src/http/responses.ts requireScheme):
 * whatever `Host`, `X-Forwarded-Host` or an absolute request target say, discovery and the
 * redirects the service builds name BASE_URL; a request over the wrong scheme is 400, not a 500;
 * discovery and JWKS say how long they may be kept. TRUST_PROXY believes the proxies it names
 * (true: one hop; a number of hops; the proxies' addresses), and the limits key the real client.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const DISCOVERY = ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'];

/** One raw request (any Host, any request target), its status, headers and body. */
function raw(t: TestApp, target: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const { port } = t.server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, headers: { accept: 'application/json', ...headers }, setHost: !('host' in headers) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Every URL-valued member of a discovery document. */
const urlsOf = (metadata: Record<string, unknown>) => Object.entries(metadata).filter(([, value]) => typeof value === 'string' && /^https?:/.test(value)) as [string, string][];

function expectPinned(body: string, baseUrl: string) {
  const metadata = JSON.parse(body) as Record<string, unknown>;
  const urls = urlsOf(metadata);
  expect(urls.length).toBeGreaterThanOrEqual(7);
  for (const [name, url] of urls) expect({ name, origin: new URL(url).origin }).toEqual({ name, origin: baseUrl });
  expect(metadata.token_endpoint).toBe(`${baseUrl}/api/token.php`);
}

describe('without TRUST_PROXY', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t?.close(); });

  test.each(DISCOVERY)('%s names BASE_URL whatever Host says (and X-Forwarded-Host, not believed)', async (path) => {
    for (const headers of [{ host: 'attacker.example' }, { host: 'attacker.example:8443', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }, {}] as Record<string, string>[]) {
      const res = await raw(t, path, headers);
      expect(res.status).toBe(200);
      expectPinned(res.body, t.baseUrl);
    }
  });

  test.each(DISCOVERY)('%s names BASE_URL for an absolute request target naming another host', async (path) => {
    const res = await raw(t, `http://attacker.example${path}`, { host: 'attacker.example' });
    expect(res.status).toBe(200);
    expectPinned(res.body, t.baseUrl);
  });

  test('discovery is kept an hour, the JWKS 5 minutes; both vary by Origin', async () => {
    for (const path of DISCOVERY) {
      const res = await fetch(`${t.baseUrl}${path}`);
      expect(res.headers.get('cache-control')).toBe('public, max-age=3600');
      expect(res.headers.get('vary')).toMatch(/Origin/);
    }
    const jwks = await fetch(`${t.baseUrl}/api/jwks.php`);
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get('cache-control')).toBe('public, max-age=300');
    expect(jwks.headers.get('vary')).toMatch(/Origin/);
  });

  test('the redirects of a flow name BASE_URL, asked with another Host', async () => {
    const client = await registerClient(t);
    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', state: 's' });
    const start = await raw(t, `/api/authorize.php?${query}`, { host: 'attacker.example', accept: 'text/html' });
    expect(start.status).toBe(303);
    expect(start.headers.location).toMatch(/^\/interaction\/|^http:\/\/localhost:\d+\/interaction\//);
    if (/^http/.test(start.headers.location!)) expect(new URL(start.headers.location!).origin).toBe(t.baseUrl);
  });
});

describe('behind a TLS-terminating proxy (TRUST_PROXY=true, BASE_URL https)', () => {
  const PUBLIC = 'https://auth.example.test';
  let t: TestApp;
  let origin: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { BASE_URL: PUBLIC, TRUST_PROXY: 'true', RATE_LIMIT_PER_MINUTE: '20' } });
    origin = `http://127.0.0.1:${(t.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => { await t?.close(); });

  test.each(DISCOVERY)('%s names BASE_URL whatever X-Forwarded-Host says', async (path) => {
    const res = await raw(t, path, { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'attacker.example', 'x-forwarded-for': '198.51.100.1' });
    expect(res.status).toBe(200);
    expectPinned(res.body, PUBLIC);
  });

  test('the login walk through the proxy names BASE_URL in every redirect, whatever X-Forwarded-Host says', async () => {
    const registered = await fetch(`${origin}/api/register.php`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https', 'x-forwarded-for': '198.51.100.2' },
      body: JSON.stringify({ client_name: 'Demo', redirect_uri: 'https://app.example/cb' }),
    });
    expect(registered.status).toBe(201);
    const client = await registered.json() as { client_id: string; client_secret: string; redirect_uri: string };
    const user = await createUser(t);
    const browser = new Browser(PUBLIC, { origin, headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'attacker.example', 'x-forwarded-for': '198.51.100.3' } });
    const redirect = await browser.authorize(client, user);
    expect(redirect.origin).toBe('https://app.example');
    expect(redirect.searchParams.get('iss')).toBe(PUBLIC);
    for (const cookie of browser.setCookies) expect(cookie).toMatch(/secure/i);
  });

  test.each([['http'], ['http, https'], ['gopher'], ['']])('X-Forwarded-Proto %p on a page that sets Secure cookies is 400 invalid_request, not a 500', async (proto) => {
    const res = await raw(t, '/api/register.php', { 'x-forwarded-proto': proto, 'x-forwarded-for': '198.51.100.4', accept: 'text/html' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('This service is served at https://auth.example.test only');
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  test('the health checks answer a load balancer that probes over plain http', async () => {
    for (const path of ['/healthz/live', '/healthz/ready', '/healthz']) expect((await raw(t, path)).status).toBe(200);
  });

  test('one hop: the client is the last X-Forwarded-For entry; rotating the entries before it changes nothing', async () => {
    const remaining = [];
    for (let i = 0; i < 5; i += 1) {
      const res = await raw(t, '/nothing-here', { 'x-forwarded-proto': 'https', 'x-forwarded-for': `10.9.9.${i}, 198.51.100.5` });
      remaining.push(res.headers['ratelimit-remaining']);
    }
    expect(remaining).toEqual(['19', '18', '17', '16', '15']);
  });
});

describe('TRUST_PROXY as hops and as addresses', () => {
  const PUBLIC = 'https://auth.example.test';
  const remainingOf = async (t: TestApp, xff: string) => (await raw(t, '/nothing-here', { 'x-forwarded-proto': 'https', 'x-forwarded-for': xff })).headers['ratelimit-remaining'];

  test('2 hops (a CDN, then a load balancer): the client is the second entry from the right, whatever comes before it', async () => {
    const t = await startTestApp({ env: { BASE_URL: PUBLIC, TRUST_PROXY: '2', RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      expect(await remainingOf(t, 'forged-1, 198.51.100.10, 203.0.113.1')).toBe('2');
      expect(await remainingOf(t, 'forged-2, 198.51.100.10, 203.0.113.2')).toBe('1'); // another CDN edge, the same client
      expect(await remainingOf(t, '198.51.100.11, 203.0.113.1')).toBe('2'); // another client
    } finally {
      await t.close();
    }
  });

  test('the proxies\' addresses: the client is the rightmost entry that is not one of them', async () => {
    const t = await startTestApp({ env: { BASE_URL: PUBLIC, TRUST_PROXY: '127.0.0.1, 10.0.0.0/8', RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      expect(await remainingOf(t, 'forged, 198.51.100.20, 10.1.2.3')).toBe('2');
      expect(await remainingOf(t, '198.51.100.20, 10.4.5.6, 10.7.8.9')).toBe('1');
      expect(await remainingOf(t, '198.51.100.21')).toBe('2');
    } finally {
      await t.close();
    }
  });

  test('a peer that is not one of the proxies is not believed: its X-Forwarded-For is ignored, its X-Forwarded-Proto too (400 for an https BASE_URL)', async () => {
    const t = await startTestApp({ env: { BASE_URL: PUBLIC, TRUST_PROXY: '10.0.0.0/8', RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const res = await raw(t, '/nothing-here', { 'x-forwarded-proto': 'https', 'x-forwarded-for': '198.51.100.30' });
      expect(res.status).toBe(400);
      expect(res.body).toContain('served at https://auth.example.test only');
    } finally {
      await t.close();
    }
  });
});
