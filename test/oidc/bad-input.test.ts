/**
 * Malformed input of any kind gets a 4xx with a clear error, never a 5xx: bad encodings, huge
 * or repeated fields, wrong content types, odd Authorization headers, unknown paths.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { registerClient } from '../helpers/fixtures.js';
import type { TestClient } from '../helpers/browser.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

interface Case {
  name: string;
  method?: string;
  path: string | ((c: TestClient) => string);
  headers?: Record<string, string>;
  body?: string | ((c: TestClient) => string);
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const huge = 'a'.repeat(200_000);

const TOKEN_CASES: Case[] = [
  { name: 'broken percent-encoding', path: '/api/token.php', headers: FORM, body: (c) => `code=%E0%A4%A&client_id=${c.client_id}&client_secret=%ZZ` },
  { name: 'NUL bytes', path: '/api/token.php', headers: FORM, body: (c) => `code=%00&client_id=${c.client_id}%00&client_secret=%00` },
  { name: 'invalid UTF-8', path: '/api/token.php', headers: FORM, body: (c) => `code=%C3%28&client_id=${c.client_id}&client_secret=%FF%FE` },
  { name: 'a huge field', path: '/api/token.php', headers: FORM, body: (c) => `code=${huge}&client_id=${c.client_id}&client_secret=x` },
  { name: 'a huge body of many fields', path: '/api/token.php', headers: FORM, body: Array.from({ length: 20_000 }, (_, i) => `f${i}=x`).join('&') },
  { name: 'repeated code', path: '/api/token.php', headers: FORM, body: (c) => `code=a&code=b&client_id=${c.client_id}&client_secret=x` },
  { name: 'repeated client_id', path: '/api/token.php', headers: FORM, body: (c) => `code=a&client_id=${c.client_id}&client_id=${c.client_id}&client_secret=x` },
  { name: 'bracketed field names', path: '/api/token.php', headers: FORM, body: (c) => `code[a]=1&code[b]=2&client_id=${c.client_id}&client_secret=x` },
  { name: 'a JSON body', path: '/api/token.php', headers: { 'content-type': 'application/json' }, body: '{"code":"x","client_id":"y","client_secret":"z"}' },
  { name: 'a text body', path: '/api/token.php', headers: { 'content-type': 'text/plain' }, body: 'code=x' },
  { name: 'a multipart body', path: '/api/token.php', headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x\r\nContent-Disposition: form-data; name="code"\r\n\r\nx\r\n--x--' },
  { name: 'no content type', path: '/api/token.php', body: 'code=x' },
  { name: 'an unknown charset', path: '/api/token.php', headers: { 'content-type': 'application/x-www-form-urlencoded; charset=klingon' }, body: 'code=x&client_id=a&client_secret=b' },
  { name: 'Basic with bad base64', path: '/api/token.php', headers: { ...FORM, authorization: 'Basic !!!' }, body: 'code=x' },
  { name: 'Basic without a colon', path: '/api/token.php', headers: { ...FORM, authorization: `Basic ${Buffer.from('nocolon').toString('base64')}` }, body: 'code=x' },
  { name: 'Basic with bad percent-encoding', path: '/api/token.php', headers: { ...FORM, authorization: `Basic ${Buffer.from('%ZZ:%ZZ').toString('base64')}` }, body: 'code=x' },
  { name: 'Basic and body credentials together', path: '/api/token.php', headers: { ...FORM, authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }, body: 'code=x&client_id=a&client_secret=b' },
  { name: 'a Bearer header', path: '/api/token.php', headers: { ...FORM, authorization: 'Bearer x' }, body: 'code=x' },
  { name: 'GET', method: 'GET', path: '/api/token.php' },
];

const USERINFO_CASES: Case[] = [
  { name: 'a huge token', path: '/api/userinfo.php', headers: { authorization: `Bearer ${'a'.repeat(8000)}` } },
  { name: 'a token with NUL', path: '/api/userinfo.php', headers: { authorization: 'Bearer a%00b' } },
  { name: 'a lower-case scheme', path: '/api/userinfo.php', headers: { authorization: 'bearer abc' } },
  { name: 'a token in the query', path: '/api/userinfo.php?access_token=abc' },
  { name: 'a POST with a form token', method: 'POST', path: '/api/userinfo.php', headers: FORM, body: 'access_token=abc' },
];

const PAGE_CASES: Case[] = [
  { name: 'authorize with broken percent-encoding', path: (c) => `/api/authorize.php?client_id=${c.client_id}&redirect_uri=%E0%A4%A&response_type=code` },
  { name: 'authorize with a huge state', path: (c) => `/api/authorize.php?client_id=${c.client_id}&redirect_uri=${encodeURIComponent(c.redirect_uri)}&response_type=code&state=${'s'.repeat(6000)}` },
  { name: 'authorize with array syntax', path: (c) => `/api/authorize.php?client_id[]=${c.client_id}&redirect_uri=x&response_type=code` },
  { name: 'authorize with a repeated scope', path: (c) => `/api/authorize.php?client_id=${c.client_id}&redirect_uri=${encodeURIComponent(c.redirect_uri)}&response_type=code&scope=a&scope=b` },
  { name: 'a resume path that does not exist', path: '/api/authorize.php/not-an-interaction' },
  { name: 'an interaction that does not exist', path: '/interaction/does-not-exist' },
  { name: 'a login post to an interaction that does not exist', method: 'POST', path: '/interaction/does-not-exist/login', headers: FORM, body: 'username=a&password=b' },
  { name: 'register with malformed JSON', method: 'POST', path: '/api/register.php', headers: { 'content-type': 'application/json' }, body: '{"client_name":' },
  { name: 'register with a JSON string', method: 'POST', path: '/api/register.php', headers: { 'content-type': 'application/json' }, body: '"hello"' },
  { name: 'register with a huge JSON body', method: 'POST', path: '/api/register.php', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: huge, redirect_uri: 'https://x.example/cb' }) },
  { name: 'register with an XML body', method: 'POST', path: '/api/register.php', headers: { 'content-type': 'application/xml' }, body: '<x/>' },
  { name: 'an unknown path', path: '/no/such/page' },
  { name: 'an unknown php path', path: '/api/admin.php' },
  { name: 'a path with broken percent-encoding', path: '/api/%E0%A4%A.php' },
  // Found by the fuzz (scripts/fuzz.mjs): both were 500s.
  { name: 'a resume path with a client_id and no redirect_uri', path: (c) => `/api/authorize.php/some-uid?client_id=${c.client_id}` },
  { name: 'a form whose Content-Encoding does not decode', method: 'POST', path: '/api/register.php', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'deflate' }, body: 'not deflate' },
  { name: 'JSON whose gzip does not decode', method: 'POST', path: '/api/register.php', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: 'not gzip' },
];

describe('malformed input', () => {
  let t: TestApp;
  let client: TestClient;
  const logged: unknown[] = [];
  beforeAll(async () => {
    t = await startTestApp({ log: (error) => logged.push(error) });
    client = await registerClient(t);
  });
  afterAll(async () => { await t.close(); });

  const send = async (c: Case) => {
    const path = typeof c.path === 'function' ? c.path(client) : c.path;
    const body = typeof c.body === 'function' ? c.body(client) : c.body;
    const res = await fetch(`${t.baseUrl}${path}`, { method: c.method ?? (body ? 'POST' : 'GET'), headers: c.headers, body, redirect: 'manual' });
    return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
  };

  describe.each([...TOKEN_CASES, ...USERINFO_CASES])('API: $name at $path', (c) => {
    test('4xx with the JSON error body', async () => {
      const res = await send(c);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.type).toMatch(/^application\/json/);
      const body = JSON.parse(res.text) as Record<string, unknown>;
      expect(typeof body.error).toBe('string');
      expect(typeof body.error_description).toBe('string');
      expect(res.text).not.toMatch(/\bat \S+ \(|node_modules|Error:/);
    });
  });

  describe.each(PAGE_CASES)('page: $name', (c) => {
    test('a clear answer below 500, no internals', async () => {
      const res = await send(c);
      expect(res.status).toBeLessThan(500);
      expect(res.text).not.toMatch(/\bat \S+ \(|node_modules|Error:/);
      if (res.status >= 400) expect(res.text).toMatch(/error/);
    });
  });

  test('nothing above was logged as an unexpected error', () => {
    expect(logged).toEqual([]);
  });
});
