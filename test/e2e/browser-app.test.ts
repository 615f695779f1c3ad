/**
 * A single-page app in a real browser (Debian's Chromium driven by playwright-core), on an
 * origin of its own: it registers itself with RFC 7591 from the page, sends the person to the
 * authorization endpoint with PKCE (S256 from WebCrypto), and on its callback exchanges the code,
 * reads userinfo and refreshes, all with fetch across origins, as browser apps and browser MCP
 * clients do. The same calls from another origin are refused by the browser.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { createUser } from '../helpers/fixtures.js';
import type { TestUser } from '../helpers/browser.js';
import { CHROMIUM, describeWith, program } from '../helpers/system-tool.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

// playwright-core never downloads browsers: Debian's.
const withChromium = describeWith(CHROMIUM);

/** The app: `/` starts a sign-in, `/callback` finishes it, `/foreign?client_id=` tries the token endpoint. */
const appPage = (service: string) => `<!doctype html><meta charset="utf-8"><title>spa</title>
<pre id="result"></pre><pre id="error"></pre>
<script type="module">
const service = ${JSON.stringify(service)};
const show = (id, value) => { document.getElementById(id).textContent = typeof value === 'string' ? value : JSON.stringify(value); };
const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
const json = async (res) => { const body = await res.json(); if (!res.ok) throw new Error(res.status + ' ' + JSON.stringify(body)); return body; };
const redirectUri = location.origin + '/callback';
try {
  if (location.pathname === '/') {
    const client = await json(await fetch(service + '/api/register.php', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], client_name: 'Page App' }),
    }));
    const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    sessionStorage.setItem('signin', JSON.stringify({ clientId: client.client_id, verifier }));
    location.assign(service + '/api/authorize.php?' + new URLSearchParams({
      client_id: client.client_id, redirect_uri: redirectUri, response_type: 'code', state: 'page-state', code_challenge: challenge, code_challenge_method: 'S256',
    }));
  } else if (location.pathname === '/callback') {
    const { clientId, verifier } = JSON.parse(sessionStorage.getItem('signin'));
    const query = new URLSearchParams(location.search);
    if (query.get('state') !== 'page-state') throw new Error('state');
    const token = (form) => fetch(service + '/api/token.php', { method: 'POST', body: new URLSearchParams({ client_id: clientId, ...form }) }).then(json);
    const tokens = await token({ grant_type: 'authorization_code', code: query.get('code'), code_verifier: verifier, redirect_uri: redirectUri });
    const info = await json(await fetch(service + '/api/userinfo.php', { headers: { authorization: 'Bearer ' + tokens.access_token } }));
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    show('result', { clientId, username: info.username, rotated: refreshed.refresh_token !== tokens.refresh_token });
  } else if (location.pathname === '/foreign') {
    const clientId = new URLSearchParams(location.search).get('client_id');
    await fetch(service + '/api/token.php', { method: 'POST', body: new URLSearchParams({ client_id: clientId, grant_type: 'refresh_token', refresh_token: 'x' }) });
    show('result', 'read');
  }
} catch (error) {
  show('error', String(error));
}
</script>`;

withChromium('a single-page app in a real browser (Chromium)', () => {
  let t: TestApp;
  let user: TestUser;
  let browser: Browser;
  let appServer: http.Server;
  let port: number;

  beforeAll(async () => {
    t = await startTestApp();
    user = await createUser(t);
    appServer = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(appPage(t.baseUrl));
    });
    await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve));
    port = (appServer.address() as AddressInfo).port;
    browser = await chromium.launch({ executablePath: program(CHROMIUM), headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  });

  afterAll(async () => {
    await browser?.close();
    appServer?.closeAllConnections();
    await new Promise((resolve) => appServer?.close(resolve));
    await t?.close();
  });

  const outcome = async (page: Page) => {
    await page.waitForSelector('#result:not(:empty), #error:not(:empty)');
    return { result: await page.textContent('#result'), error: await page.textContent('#error') };
  };

  test('registers, signs in with PKCE, exchanges, reads userinfo and refreshes from its own origin; another origin cannot', async () => {
    const context = await browser.newContext();
    context.setDefaultTimeout(10_000);
    try {
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${port}/`);
      await page.waitForSelector('#username');
      await page.fill('#username', user.username);
      await page.fill('#password', user.password);
      await page.click('#login');
      await page.waitForSelector('#self_registered');
      expect(await page.textContent('#client_name')).toBe('Page App');
      await page.click('#approve');
      await page.waitForURL(`http://127.0.0.1:${port}/callback?**`);
      const signedIn = await outcome(page);
      expect(signedIn.error).toBe('');
      const result = JSON.parse(signedIn.result!) as { clientId: string; username: string; rotated: boolean };
      expect(result).toEqual({ clientId: expect.any(String), username: user.username, rotated: true });

      // localhost is another origin than 127.0.0.1: the browser gets no answer it may read.
      await page.goto(`http://localhost:${port}/foreign?client_id=${encodeURIComponent(result.clientId)}`);
      const foreign = await outcome(page);
      expect(foreign).toEqual({ result: '', error: 'TypeError: Failed to fetch' });
    } finally {
      await context.close();
    }
  });
});
