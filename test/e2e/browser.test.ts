/**
 * The flow in a real browser (Debian's Chromium driven by playwright-core): real cookie-path
 * handling (the interaction cookie is scoped to /interaction/<uid>), SameSite, CSP and
 * redirects, with no help from a hand-written client. The client's redirect target is a tiny
 * local HTTP server.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Cookie, Page } from 'playwright-core';
import { createUser, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { CHROMIUM, describeWith, program } from '../helpers/system-tool.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

// playwright-core never downloads browsers: Debian's.
const withChromium = describeWith(CHROMIUM);

withChromium('a real browser (Chromium)', () => {
  let t: TestApp;
  let browser: Browser;
  let callbackServer: http.Server;
  let callbackUrl: string;
  const posted: URLSearchParams[] = [];

  beforeAll(async () => {
    // The client's site: /callback answers a plain page (and keeps the forms posted to it);
    // /frame?src=<url> frames <url> next to /callback.
    callbackServer = http.createServer(async (req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method === 'POST') {
        let form = '';
        for await (const chunk of req) form += String(chunk);
        posted.push(new URLSearchParams(form));
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      if (url.pathname === '/frame') {
        const src = url.searchParams.get('src')!.replace(/"/g, '&quot;');
        res.end(`<!doctype html><title>framer</title><iframe name="victim" src="${src}"></iframe><iframe name="control" src="/callback"></iframe>`);
        return;
      }
      res.end('<!doctype html><title>callback</title><p id="callback">received</p>');
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    callbackUrl = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;
    [t, browser] = await Promise.all([
      startTestApp(),
      chromium.launch({ executablePath: program(CHROMIUM), headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] }),
    ]);
  });

  afterAll(async () => {
    await browser?.close();
    callbackServer?.closeAllConnections();
    await new Promise((resolve) => callbackServer?.close(resolve));
    await t?.close();
  });

  async function withPage(use: (page: Page, context: BrowserContext) => Promise<void>) {
    const context = await browser.newContext();
    context.setDefaultTimeout(5000);
    try {
      await use(await context.newPage(), context);
    } finally {
      await context.close();
    }
  }

  /** Registers a client through the registration page, as a person would. */
  async function registerInBrowser(page: Page) {
    await page.goto(`${t.baseUrl}/api/register.php`);
    await page.fill('#client_name', 'Browser App');
    await page.fill('#redirect_uri', callbackUrl);
    await page.click('#register');
    await page.waitForSelector('#client_secret');
    const client = {
      client_id: (await page.textContent('#client_id'))!.trim(),
      client_secret: (await page.textContent('#client_secret'))!.trim(),
      redirect_uri: callbackUrl,
    };
    expect(client.client_id).not.toBe('');
    expect(client.client_secret).not.toBe('');
    return client;
  }

  function authorizeUrl(client: { client_id: string; redirect_uri: string }, state: string) {
    return `${t.baseUrl}/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', state })}`;
  }

  /** Submits the login form and waits until the next document has loaded (not the old one); returns the POST's response. */
  async function login(page: Page, username: string, password: string) {
    await page.fill('#username', username);
    await page.fill('#password', password);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname.endsWith('/login')),
      page.waitForEvent('framenavigated', { predicate: (frame) => frame === page.mainFrame() }),
      page.click('#login'),
    ]);
    await page.waitForLoadState('domcontentloaded');
    return response;
  }

  /** A child frame once it has left about:blank and the authorization redirect (Chromium swaps a refused frame for its error page). */
  async function settledFrame(page: Page, name: string) {
    for (const deadline = Date.now() + 5000; Date.now() < deadline; await page.waitForTimeout(50)) {
      const frame = page.frame({ name });
      const url = frame?.url() ?? '';
      if (frame && url !== '' && url !== 'about:blank' && !url.includes('/api/authorize.php')) return frame;
    }
    throw new Error(`frame ${name} never settled`);
  }

  const atCallback = (url: URL) => `${url.origin}${url.pathname}` === callbackUrl;
  const serviceCookies = async (context: BrowserContext): Promise<Cookie[]> =>
    (await context.cookies()).filter((cookie) => cookie.domain === new URL(t.baseUrl).hostname);

  function expectSafeCookies(cookies: Cookie[]) {
    expect(cookies.length).toBeGreaterThan(0);
    for (const cookie of cookies) {
      expect({ name: cookie.name, httpOnly: cookie.httpOnly, sameSite: cookie.sameSite })
        .toEqual({ name: cookie.name, httpOnly: true, sameSite: 'Lax' });
    }
  }

  test('register, log in, approve, receive the code, exchange it and read the profile', async () => {
    await withPage(async (page, context) => {
      const client = await registerInBrowser(page);
      const user = await createUser(t, { email: 'chromium@example.com', fullName: 'Chromium User' });

      await page.goto(authorizeUrl(client, 'browser-state'));
      expect(new URL(page.url()).pathname).toMatch(/^\/interaction\/[^/]+$/);

      // The interaction cookie exists and is scoped to this interaction's path; all are HttpOnly + Lax.
      const atLogin = await serviceCookies(context);
      expect(atLogin.find((cookie) => cookie.name === '_interaction')?.path).toBe(new URL(page.url()).pathname);
      expectSafeCookies(atLogin);

      await login(page, user.username, user.password);
      await page.waitForSelector('#approve');
      expect(await page.textContent('#client_name')).toBe('Browser App');
      await page.click('#approve');
      await page.waitForURL(atCallback);

      const redirect = new URL(page.url());
      expect(redirect.searchParams.get('state')).toBe('browser-state');
      expect(redirect.searchParams.get('iss')).toBe(t.baseUrl);
      const code = redirect.searchParams.get('code');
      expect(code).toBeTruthy();

      const names = (await serviceCookies(context)).map((cookie) => cookie.name);
      expect(names).toContain('_session');
      expectSafeCookies(await serviceCookies(context));

      const token = await tokenRequest(t, { code: code!, client_id: client.client_id, client_secret: client.client_secret });
      expect(token.status).toBe(200);
      expect(token.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
      const profile = await userinfo(t, `Bearer ${String(token.body.access_token)}`);
      expect(profile.status).toBe(200);
      expect(profile.body).toMatchObject({ username: user.username, email: 'chromium@example.com', full_name: 'Chromium User' });
    });
  });

  test('response_mode=form_post: the page posts code, state and iss to the client under the CSP', async () => {
    await withPage(async (page) => {
      const client = await registerInBrowser(page);
      const user = await createUser(t);
      posted.length = 0;
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST' && atCallback(new URL(r.url()))),
        (async () => {
          await page.goto(`${authorizeUrl(client, 'posted-state')}&response_mode=form_post`);
          await login(page, user.username, user.password);
          await page.click('#approve');
        })(),
      ]);
      expect(response.status()).toBe(200);
      expect(posted).toHaveLength(1);
      expect(posted[0]!.get('state')).toBe('posted-state');
      expect(posted[0]!.get('iss')).toBe(t.baseUrl);
      const code = posted[0]!.get('code')!;
      const token = await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
      expect(token.status).toBe(200);
    });
  });

  test('unknown user and wrong password show the same single message; the right password then works', async () => {
    await withPage(async (page) => {
      const client = await registerInBrowser(page);
      const user = await createUser(t);
      await page.goto(authorizeUrl(client, 'retry'));

      expect(await page.locator('#error').count()).toBe(0);
      expect((await login(page, `nobody${Date.now()}`, 'whatever password')).status()).toBe(401);
      expect(await page.locator('#error').count()).toBe(1);
      const unknown = await page.locator('#error').textContent();
      expect((await login(page, user.username, 'wrong password')).status()).toBe(401);
      expect(await page.locator('#error').count()).toBe(1);
      const wrong = await page.locator('#error').textContent();
      expect(unknown).toBeTruthy();
      expect(wrong).toBe(unknown);
      expect(await page.inputValue('#username')).toBe(user.username);

      await login(page, user.username, user.password);
      await page.click('#approve');
      await page.waitForURL(atCallback);
      expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    });
  });

  test('Deny sends the browser to the callback with error=access_denied', async () => {
    await withPage(async (page) => {
      const client = await registerInBrowser(page);
      const user = await createUser(t);
      await page.goto(authorizeUrl(client, 'denied'));
      await login(page, user.username, user.password);
      await page.click('#deny');
      await page.waitForURL(atCallback);
      const redirect = new URL(page.url());
      expect(redirect.searchParams.get('error')).toBe('access_denied');
      expect(redirect.searchParams.get('state')).toBe('denied');
      expect(redirect.searchParams.get('code')).toBeNull();
    });
  });

  test('the login page cannot be framed: CSP frame-ancestors and X-Frame-Options, enforced by the browser', async () => {
    await withPage(async (page) => {
      const client = await registerInBrowser(page);
      const url = authorizeUrl(client, 'framed');
      const loginPage = await page.goto(url);
      expect(new URL(loginPage!.url()).pathname).toMatch(/^\/interaction\/[^/]+$/);
      const headers = loginPage!.headers();
      expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(headers['x-frame-options']).toBe('DENY');

      // A page on another site frames the authorization URL: Chromium renders nothing of ours,
      // while the control frame (framing allowed) loads, so the setup itself works.
      await page.goto(`${new URL(callbackUrl).origin}/frame?${new URLSearchParams({ src: url })}`);
      const control = page.frame({ name: 'control' })!;
      expect(await control.locator('#callback').count()).toBe(1);
      const victim = await settledFrame(page, 'victim');
      expect(victim.url()).toBe('chrome-error://chromewebdata/'); // Chromium's page for a refused frame
      expect(await victim.locator('main, form, #username').count()).toBe(0);
    });
  });
});
