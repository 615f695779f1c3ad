/**
 * The login and consent pages (`/interaction/<uid>`): field names and button ids are contracts;
 * CSRF, one message for every failed login, cookie flags and framing are the security rules.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import type { Step, TestClient } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

type Page = Step & { url: string };

function authorizePath(client: TestClient, extra: Record<string, string> = {}): string {
  return `/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', ...extra })}`;
}

/** The text of the element with `id`. */
function elementText(html: string, id: string): string | undefined {
  return new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(html)?.[1];
}

/** The action of the form whose action ends with `suffix`. */
function formAction(page: Page, suffix: string): string {
  const action = [...page.body.matchAll(/<form[^>]*action="([^"]*)"/g)].map((m) => m[1]!).find((a) => a.endsWith(suffix));
  if (!action) throw new Error(`no form posting to ${suffix} on ${page.url}:\n${page.body}`);
  return new URL(action, page.url).toString();
}

function expectNoFraming(step: Step) {
  expect(step.headers.get('content-security-policy')).toMatch(/(^|;)\s*frame-ancestors 'none'\s*(;|$)/);
  expect(step.headers.get('x-frame-options')).toBe('DENY');
}

describe('over http (BASE_URL http://localhost:<port>)', () => {
  let t: TestApp;
  let client: TestClient & { client_name: string };
  let user: Awaited<ReturnType<typeof createUser>>;

  beforeAll(async () => {
    t = await startTestApp();
    client = await registerClient(t, 'http://localhost:9999/callback', 'Photo Printer <Deluxe>');
    user = await createUser(t);
  });
  afterAll(async () => { await t?.close(); });

  async function loginPage(browser = new Browser(t.baseUrl)): Promise<{ browser: Browser; page: Page }> {
    const page = await browser.follow(authorizePath(client));
    expect(page.status).toBe(200);
    expect(page.url).toMatch(/\/interaction\/[^/]+$/);
    return { browser, page };
  }

  async function consentPage(): Promise<{ browser: Browser; page: Page }> {
    const { browser, page } = await loginPage();
    const consent = await browser.submit(page, '/login', { username: user.username, password: user.password });
    expect(consent.status).toBe(200);
    return { browser, page: consent };
  }

  describe('login page', () => {
    test('has username and password inputs, a _csrf field and the client name; not cached', async () => {
      const { page } = await loginPage();
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('cache-control')).toBe('no-store');
      expect(page.body).toMatch(/<input[^>]*type="text"[^>]*name="username"/);
      expect(page.body).toMatch(/<input[^>]*type="password"[^>]*name="password"/);
      expect(page.body).toMatch(/<input[^>]*type="hidden"[^>]*name="_csrf"[^>]*value="[^"]{32,}"/);
      expect(formAction(page, '/login')).toMatch(/\/interaction\/[^/]+\/login$/);
      // The name is escaped, never markup.
      expect(elementText(page.body, 'client_name')).toBe('Photo Printer &lt;Deluxe&gt;');
    });

    test('a post without the token is refused with 403 and does not log in', async () => {
      const { browser, page } = await loginPage();
      const refused = await browser.request(formAction(page, '/login'), { form: { username: user.username, password: user.password } });
      expect(refused.status).toBe(403);
      expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
      expect(refused.location).toBeUndefined();
      expect(refused.body).toMatch(/<h1>/);

      const wrongToken = await browser.request(formAction(page, '/login'), { form: { _csrf: 'forged', username: user.username, password: user.password } });
      expect(wrongToken.status).toBe(403);

      // The interaction is still usable with the real token.
      const consent = await browser.submit(page, '/login', { username: user.username, password: user.password });
      expect(consent.body).toContain('id="approve"');
    });

    test('another browser\'s token is refused', async () => {
      const mine = await loginPage();
      const theirs = await loginPage();
      const theirToken = /name="_csrf" value="([^"]*)"/.exec(theirs.page.body)![1]!;
      const refused = await mine.browser.request(formAction(mine.page, '/login'), {
        form: { _csrf: theirToken, username: user.username, password: user.password },
      });
      expect(refused.status).toBe(403);
    });

    test('an unknown user and a wrong password get the same message and status', async () => {
      const attempts = [
        { username: 'nobody-here', password: user.password },
        { username: user.username, password: 'wrong password!' },
        { username: 'not a valid username!', password: 'whatever' },
      ];
      const outcomes: { status: number; message: string | undefined }[] = [];
      for (const credentials of attempts) {
        const { browser, page } = await loginPage();
        const failed = await browser.submit(page, '/login', credentials);
        outcomes.push({ status: failed.status, message: elementText(failed.body, 'error') });
        expect(failed.body).toMatch(/<input[^>]*name="password"/); // the form again, to retry
        expect(failed.body).not.toContain(credentials.password);
      }
      expect(outcomes[0]!.status).toBeGreaterThanOrEqual(400);
      expect(outcomes[0]!.status).toBeLessThan(500);
      expect(outcomes[0]!.message).toBeTruthy();
      expect(outcomes[1]).toEqual(outcomes[0]);
      expect(outcomes[2]).toEqual(outcomes[0]);
    });

    test('after a failed attempt the same page still logs in', async () => {
      const { browser, page } = await loginPage();
      const failed = await browser.submit(page, '/login', { username: user.username, password: 'wrong password!' });
      const consent = await browser.submit({ url: page.url, body: failed.body }, '/login', { username: user.username, password: user.password });
      expect(consent.body).toContain('id="approve"');
    });

    test('usernames are case-insensitive', async () => {
      const { browser, page } = await loginPage();
      const consent = await browser.submit(page, '/login', { username: user.username.toUpperCase(), password: user.password });
      expect(consent.body).toContain('id="approve"');
    });
  });

  describe('consent page', () => {
    test('names the client and has #approve and #deny, each with the token', async () => {
      const { page } = await consentPage();
      expect(page.headers.get('cache-control')).toBe('no-store');
      expect(elementText(page.body, 'client_name')).toBe('Photo Printer &lt;Deluxe&gt;');
      expect(page.body).toMatch(/<button[^>]*id="approve"[^>]*type="submit"/);
      expect(page.body).toMatch(/<button[^>]*id="deny"[^>]*type="submit"/);
      for (const suffix of ['/confirm', '/abort']) {
        const form = new RegExp(`<form[^>]*action="[^"]*${suffix}"[^>]*>([\\s\\S]*?)</form>`).exec(page.body);
        expect(form?.[1]).toMatch(/name="_csrf" value="[^"]{32,}"/);
      }
    });

    test('approve and deny without the token are refused with 403', async () => {
      const { browser, page } = await consentPage();
      for (const suffix of ['/confirm', '/abort']) {
        const refused = await browser.request(formAction(page, suffix), { method: 'POST', form: {} });
        expect(refused.status).toBe(403);
        expect(refused.location).toBeUndefined();
      }
      const approved = await browser.submit(page, '/confirm');
      expect(new URL(approved.location!).searchParams.get('code')).toBeTruthy();
    });
  });

  describe('cookies', () => {
    test('every cookie of a whole flow is HttpOnly and SameSite=Lax, and not Secure over http', async () => {
      const browser = new Browser(t.baseUrl);
      const redirect = await browser.authorize(client, user);
      expect(redirect.searchParams.get('code')).toBeTruthy();
      const names = new Set(browser.setCookies.map((line) => line.split('=')[0]));
      expect([...names]).toEqual(expect.arrayContaining(['csrf', '_interaction', '_session']));
      for (const line of browser.setCookies) {
        expect(line).toMatch(/;\s*httponly/i);
        expect(line).toMatch(/;\s*samesite=lax/i);
        expect(line).not.toMatch(/;\s*secure/i);
      }
    });

    test('no Strict-Transport-Security over http', async () => {
      const { page } = await loginPage();
      expect(page.headers.get('strict-transport-security')).toBeNull();
    });
  });

  describe('framing', () => {
    test('the login page refuses framing', async () => {
      expectNoFraming((await loginPage()).page);
    });

    test('the consent page refuses framing', async () => {
      expectNoFraming((await consentPage()).page);
    });

    test('error pages refuse framing: ours and the provider\'s', async () => {
      const browser = new Browser(t.baseUrl);
      const unknownInteraction = await browser.request('/interaction/no-such-uid');
      expect(unknownInteraction.status).toBe(400);
      expectNoFraming(unknownInteraction);
      const unknownClient = await browser.request(authorizePath({ ...client, client_id: 'no-such-client' }));
      expect(unknownClient.status).toBeGreaterThanOrEqual(400);
      expect(unknownClient.headers.get('content-type')).toMatch(/^text\/html/);
      expectNoFraming(unknownClient);
      const notFound = await browser.request('/no/such/page');
      expect(notFound.status).toBe(404);
      expectNoFraming(notFound);
    });
  });

  describe('unknown and expired interactions', () => {
    function expectReadable4xx(step: Step) {
      expect(step.status).toBeGreaterThanOrEqual(400);
      expect(step.status).toBeLessThan(500);
      expect(step.headers.get('content-type')).toMatch(/^text\/html/);
      expect(step.body).toMatch(/<h1>[^<]+<\/h1>/);
      expect(elementText(step.body, 'error_description')).toBeTruthy();
      expect(step.body).not.toMatch(/\bat .*\.(js|ts):\d+/); // no stack trace
    }

    test('an unknown uid without an interaction cookie gives a readable 4xx page', async () => {
      const browser = new Browser(t.baseUrl);
      expectReadable4xx(await browser.request('/interaction/no-such-uid'));
    });

    test('an interaction that has expired gives a readable 4xx page, for the page and for the form posts', async () => {
      const { browser, page } = await loginPage();
      const uid = /\/interaction\/([^/]+)$/.exec(page.url)![1]!;
      const interaction = await t.app.provider.Interaction.find(uid);
      expect(interaction).toBeTruthy();
      await interaction!.destroy(); // what expiry does: the provider no longer finds it

      for (const step of [await browser.request(page.url), await browser.submit(page, '/login', { username: user.username, password: user.password }), await browser.submit(page, '/abort')]) {
        expectReadable4xx(step);
        expect(step.location).toBeUndefined();
        // Our words, not the provider's "interaction session not found".
        expect(elementText(step.body, 'error_description')).toContain('This sign-in step is no longer current');
      }
    });

    test('a sign-in step already finished (Back after signing in, the login form again from a second tab) says so', async () => {
      const { browser, page } = await loginPage();
      const consent = await browser.submit(page, '/login', { username: user.username, password: user.password });
      expect(consent.body).toContain('id="approve"');
      const back = await browser.request(page.url);
      expectReadable4xx(back);
      expect(elementText(back.body, 'error_description')).toContain('This sign-in step is no longer current');
      // The form of the page before: its anti-forgery token was renewed at the sign-in (ui/csrf.ts).
      const again = await browser.submit(page, '/login', { username: user.username, password: user.password });
      expectReadable4xx(again);
      expect(elementText(again.body, 'error_description')).toContain('This form has expired');
    });

    test('a uid that is not the browser\'s current interaction gives a readable 4xx page', async () => {
      const { browser, page } = await loginPage();
      const csrf = /name="_csrf" value="([^"]*)"/.exec(page.body)![1]!;
      // The interaction cookie is scoped to its own uid's path, so another uid carries none.
      const other = await browser.request('/interaction/some-other-uid/login', { form: { _csrf: csrf, username: user.username, password: user.password } });
      expectReadable4xx(other);
    });
  });
});

describe('behind a TLS-terminating proxy (BASE_URL https, TRUST_PROXY=true)', () => {
  const PUBLIC = 'https://auth.example.test';
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestApp({ env: { BASE_URL: PUBLIC, TRUST_PROXY: 'true' } });
    const { port } = t.server.address() as AddressInfo;
    browser = new Browser(PUBLIC, {
      origin: `http://127.0.0.1:${port}`,
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'auth.example.test' },
    });
  });
  afterAll(async () => { await t?.close(); });

  test('a whole flow sets only Secure, HttpOnly, SameSite=Lax cookies and every response carries HSTS', async () => {
    const user = await createUser(t);
    const redirectUri = 'https://app.example.com/callback';
    const { client, clientSecret } = await t.app.clients.register({ clientName: 'Secure App', redirectUri });
    const testClient = { client_id: client.clientId, client_secret: clientSecret, redirect_uri: redirectUri };

    const login = await browser.follow(authorizePath(testClient));
    expect(login.status).toBe(200);
    expect(login.url.startsWith(`${PUBLIC}/interaction/`)).toBe(true);
    expect(login.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
    expectNoFraming(login);

    const consent = await browser.submit(login, '/login', { username: user.username, password: user.password });
    expect(consent.body).toContain('id="approve"');
    expect(consent.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);

    const approved = await browser.submit(consent, '/confirm');
    const redirect = new URL(approved.location!);
    expect(`${redirect.origin}${redirect.pathname}`).toBe(redirectUri);
    expect(redirect.searchParams.get('code')).toBeTruthy();
    expect(redirect.searchParams.get('iss')).toBe(PUBLIC);
    expect(approved.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);

    expect(browser.setCookies.length).toBeGreaterThan(0);
    for (const line of browser.setCookies) {
      expect(line).toMatch(/;\s*secure/i);
      expect(line).toMatch(/;\s*httponly/i);
      expect(line).toMatch(/;\s*samesite=lax/i);
    }
    // The form token's cookie is a __Host- cookie: Secure, Path=/, no Domain.
    const csrf = browser.setCookies.find((line) => line.startsWith('__Host-csrf='));
    expect(csrf).toMatch(/;\s*path=\/(;|$)/i);
    expect(csrf).not.toMatch(/;\s*domain=/i);
  });
});
