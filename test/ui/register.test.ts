/**
 * `/api/register.php`: the CSRF-protected form for people and the JSON POST for scripts.
 * Field names, element ids and the JSON shape are contracts client teams' scripts rely on.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const PATH = '/api/register.php';

let t: TestApp;
beforeAll(async () => { t = await startTestApp(); });
afterAll(async () => { await t?.close(); });

/** The `name=value` pairs of every Set-Cookie header, ready to send back. */
function cookieHeader(res: Response): string {
  return res.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ');
}

/** The text of the element with `id`, unescaped enough for base64url and plain words. */
function elementText(html: string, id: string): string | undefined {
  const match = new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(html);
  return match?.[1]?.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>');
}

/** GETs the form; returns the token and the cookies that go with it. */
async function openForm(): Promise<{ csrf: string; cookie: string; res: Response; html: string }> {
  const res = await fetch(`${t.baseUrl}${PATH}`, { headers: { accept: 'text/html' } });
  const html = await res.text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!csrf) throw new Error(`no _csrf field on the form:\n${html}`);
  return { csrf, cookie: cookieHeader(res), res, html };
}

function postForm(fields: Record<string, string> | [string, string][], cookie?: string, accept = 'text/html') {
  return fetch(`${t.baseUrl}${PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept, ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
  });
}

function postJson(body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${t.baseUrl}${PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const GOOD = { client_name: 'Demo App', redirect_uri: 'https://app.example.com/callback' };

describe('GET /api/register.php', () => {
  test('shows the form with client_name, redirect_uri and a hidden _csrf field', async () => {
    const { res, html } = await openForm();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html).toMatch(/<form[^>]*method="post"[^>]*action="\/api\/register.php"/);
    expect(html).toMatch(/<input[^>]*name="client_name"/);
    expect(html).toMatch(/<input[^>]*name="redirect_uri"/);
    expect(html).toMatch(/<input[^>]*type="hidden"[^>]*name="_csrf"[^>]*value="[^"]{32,}"/);
  });

  test('sets the CSRF cookie HttpOnly and SameSite=Lax (not Secure over http)', async () => {
    const { res } = await openForm();
    const cookies = res.headers.getSetCookie();
    expect(cookies.some((line) => /^csrf=/.test(line))).toBe(true);
    for (const line of cookies) {
      expect(line).toMatch(/;\s*httponly/i);
      expect(line).toMatch(/;\s*samesite=lax/i);
      expect(line).not.toMatch(/;\s*secure/i);
    }
  });

  test('refuses framing', async () => {
    const { res } = await openForm();
    expect(res.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
  });
});

describe('POST /api/register.php (form)', () => {
  test('with the token: 201 page showing #client_id and #client_secret, not cached', async () => {
    const { csrf, cookie } = await openForm();
    const res = await postForm({ ...GOOD, _csrf: csrf }, cookie);
    const html = await res.text();
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(elementText(html, 'client_id')).toMatch(/^[\w-]{16,}$/);
    expect(elementText(html, 'client_secret')).toMatch(/^[\w-]{43,}$/);
    expect(html).toContain('Demo App');

    const stored = await t.app.clients.find(elementText(html, 'client_id')!);
    expect(stored).toMatchObject({ clientName: 'Demo App', redirectUri: GOOD.redirect_uri });
    // Only a digest is stored: the secret shown cannot be read back.
    expect(stored!.clientSecretHash).not.toContain(elementText(html, 'client_secret')!);
  });

  test('without a token: 403 page, nothing registered', async () => {
    const { cookie } = await openForm();
    const name = `no-token-${Date.now()}`;
    const res = await postForm({ ...GOOD, client_name: name }, cookie);
    const html = await res.text();
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html).not.toContain('id="client_secret"');
    expect(await t.app.db.prisma.client.count({ where: { clientName: name } })).toBe(0);
  });

  test('with a wrong token, or a token without its cookie: 403 page', async () => {
    const { csrf, cookie } = await openForm();
    const other = await openForm();
    for (const [fields, sentCookie] of [
      [{ ...GOOD, _csrf: `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}` }, cookie],
      [{ ...GOOD, _csrf: other.csrf }, cookie], // another browser's token
      [{ ...GOOD, _csrf: csrf }, undefined], // a cross-site post carries no cookie
      [{ ...GOOD, _csrf: 'x' }, cookie],
    ] as const) {
      const res = await postForm(fields, sentCookie);
      const html = await res.text();
      expect(res.status).toBe(403);
      expect(html).toMatch(/<h1>/);
      expect(html).not.toContain('id="client_secret"');
    }
  });

  test('bad input re-renders the form with the message (400), keeping the token', async () => {
    const { csrf, cookie } = await openForm();
    const res = await postForm({ client_name: 'Demo App', redirect_uri: 'http://example.com/cb', _csrf: csrf }, cookie);
    const html = await res.text();
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(elementText(html, 'error')).toMatch(/redirect_uri must use https/);
    expect(html).toMatch(/<input[^>]*name="client_name"[^>]*value="Demo App"/);
    expect(html).toMatch(/<input[^>]*name="redirect_uri"[^>]*value="http:\/\/example.com\/cb"/);
    expect(html).toContain(`name="_csrf" value="${csrf}"`);
    expect(html).not.toContain('id="client_secret"');
  });

  test('a missing client_name re-renders the form with the message (400)', async () => {
    const { csrf, cookie } = await openForm();
    const res = await postForm({ redirect_uri: GOOD.redirect_uri, _csrf: csrf }, cookie);
    expect(res.status).toBe(400);
    expect(elementText(await res.text(), 'error')).toMatch(/client_name is required/);
  });

  test('a repeated field is a 400 page, not a 5xx', async () => {
    const { csrf, cookie } = await openForm();
    const res = await postForm([['client_name', 'A'], ['client_name', 'B'], ['redirect_uri', GOOD.redirect_uri], ['_csrf', csrf]], cookie);
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/client_name must be given once/);
  });
});

describe('POST /api/register.php (JSON)', () => {
  test('201 with client_id, client_secret, client_name, redirect_uri; not cached; no form token needed', async () => {
    const res = await postJson(GOOD);
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = await res.json() as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['client_id', 'client_name', 'client_secret', 'redirect_uri']);
    expect(body).toMatchObject({ client_name: GOOD.client_name, redirect_uri: GOOD.redirect_uri });
    expect(body.client_id).toEqual(expect.stringMatching(/^[\w-]+$/));
    // 256 random bits in base64url are 43 characters.
    expect(body.client_secret).toEqual(expect.stringMatching(/^[A-Za-z0-9_-]{43,}$/));
  });

  test('two registrations get different ids and secrets', async () => {
    const [a, b] = await Promise.all([postJson(GOOD), postJson(GOOD)]);
    const [first, second] = await Promise.all([a.json(), b.json()]) as Record<string, string>[];
    expect(first!.client_id).not.toBe(second!.client_id);
    expect(first!.client_secret).not.toBe(second!.client_secret);
  });

  test('the issued secret authenticates the client at the token endpoint (and a wrong one does not)', async () => {
    const client = await (await postJson(GOOD)).json() as Record<string, string>;
    const token = (secret: string) => fetch(`${t.baseUrl}/api/token.php`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ code: 'unknown-code', client_id: client.client_id!, client_secret: secret }).toString(),
    });
    const wrong = await token(`${client.client_secret}x`);
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_client' });
    // Authenticated, so the failure moves on to the (unknown) code.
    const right = await token(client.client_secret!);
    expect(right.status).toBe(400);
    expect(await right.json()).toMatchObject({ error: 'invalid_code' });
  });

  describe('redirect URIs', () => {
    test.each([
      'https://app.example.com/callback',
      'https://app.example.com:8443/cb?x=1',
      'http://localhost:8080/cb',
      'http://127.0.0.1/cb',
      'http://[::1]:3000/cb',
    ])('accepts %s', async (redirectUri) => {
      const res = await postJson({ client_name: 'Demo', redirect_uri: redirectUri });
      expect(res.status).toBe(201);
      expect(await res.json()).toMatchObject({ redirect_uri: redirectUri });
    });

    test.each([
      ['http on a public host', 'http://example.com/cb'],
      ['http on a host that merely starts with localhost', 'http://localhost.example.com/cb'],
      ['a fragment', 'https://x/cb#frag'],
      ['an empty fragment', 'https://x/cb#'],
      ['credentials', 'https://u:p@x/cb'],
      ['a relative reference', '/cb'],
      ['javascript:', 'javascript:alert(1)'],
      ['ftp:', 'ftp://x/cb'],
      ['data:', 'data:text/html,hi'],
      ['white space', 'https://x/c b'],
      ['an empty value', ''],
      ['an over-long value', `https://app.example.com/${'a'.repeat(2100)}`],
    ])('refuses %s with 400 invalid_request', async (_, redirectUri) => {
      const res = await postJson({ client_name: 'Demo', redirect_uri: redirectUri });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = await res.json() as Record<string, unknown>;
      expect(body.error).toBe('invalid_request');
      expect(body.error_description).toEqual(expect.stringContaining('redirect_uri'));
    });

    test('a missing redirect_uri is 400 invalid_request', async () => {
      const res = await postJson({ client_name: 'Demo' });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: 'invalid_request', error_description: 'redirect_uri is required' });
    });
  });

  test.each([
    ['missing', {}],
    ['empty', { client_name: '' }],
    ['blank', { client_name: '   ' }],
    ['over-long', { client_name: 'n'.repeat(101) }],
    ['with a control character', { client_name: 'Demo\u0000App' }],
    ['with a C1 control character', { client_name: '\u0085Demo' }],
    ['with a right-to-left override', { client_name: 'Demo \u202egnp.exe' }],
    ['invisible (zero-width only)', { client_name: '\u200b\u200b' }],
    ['blank-looking (the Hangul filler)', { client_name: '\u3164' }],
    ['blank-looking (the Braille blank)', { client_name: '\u2800' }],
    ['with a right-to-left mark', { client_name: 'Demo\u200f' }],
    ['with stacked combining marks', { client_name: 'Z\u0301\u0302\u0303\u0304\u0305' }],
  ])('a %s client_name is 400 invalid_request', async (_, name) => {
    const res = await postJson({ redirect_uri: GOOD.redirect_uri, ...name });
    expect(res.status).toBe(400);
    const body = await res.json() as Record<string, unknown>;
    expect(body.error).toBe('invalid_request');
    expect(body.error_description).toEqual(expect.stringContaining('client_name'));
  });

  test('a name in any script, with emoji (zero-width joiners included), is taken as given', async () => {
    const name = 'Ünïcødé アプリ 👩‍👩‍👧';
    const res = await postJson({ client_name: name, redirect_uri: GOOD.redirect_uri });
    expect(res.status).toBe(201);
    expect((await res.json() as Record<string, unknown>).client_name).toBe(name);
  });

  describe('malformed requests get a 4xx JSON error, never a 5xx', () => {
    test.each<[string, () => Promise<Response>]>([
      ['a repeated (array) field', () => postJson({ client_name: ['A', 'B'], redirect_uri: GOOD.redirect_uri })],
      ['a non-string field', () => postJson({ client_name: { a: 1 }, redirect_uri: GOOD.redirect_uri })],
      ['a numeric field', () => postJson({ client_name: 'Demo', redirect_uri: 42 })],
      ['a JSON array body', () => postJson([GOOD])],
      ['a JSON string body', () => postJson('"hello"')],
      ['a JSON null body', () => postJson('null')],
      ['malformed JSON', () => postJson('{"client_name": "Demo",')],
      ['an empty JSON body', () => postJson('')],
      ['a lone surrogate in a name (JSON can spell it, no UTF-8 can hold it)', () => postJson('{"client_name":"ok\\ud83d","redirect_uri":"https://a.example/cb"}')],
      ['a lone surrogate in a key', () => postJson('{"client_name":"ok","redirect_uri":"https://a.example/cb","\\udc00":1}')],
      ['a text/plain body', () => fetch(`${t.baseUrl}${PATH}`, {
        method: 'POST', headers: { 'content-type': 'text/plain', accept: 'application/json' }, body: JSON.stringify(GOOD),
      })],
      ['no content type', () => fetch(`${t.baseUrl}${PATH}`, {
        method: 'POST', headers: { accept: 'application/json' }, body: new Blob([JSON.stringify(GOOD)]),
      })],
      ['a huge JSON body', () => postJson({ client_name: 'Demo', redirect_uri: GOOD.redirect_uri, padding: 'x'.repeat(1024 * 1024) })],
      ['a repeated form field, asking for JSON', async () => {
        const { csrf, cookie } = await openForm();
        return postForm([['client_name', 'A'], ['client_name', 'B'], ['redirect_uri', GOOD.redirect_uri], ['_csrf', csrf]], cookie, 'application/json');
      }],
    ])('%s', async (_, send) => {
      const res = await send();
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = await res.json() as Record<string, unknown>;
      expect(body).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
      expect(String(body.error_description)).not.toMatch(/\bat .*\.(js|ts):\d+/); // no stack trace
    });
  });
});
