/**
 * The anti-forgery token on every HTML form (src/ui/csrf.ts): a token of the right length in
 * characters but not in bytes is a 403 like any wrong one (never a 500, nothing logged); a token
 * lives CSRF_LIFETIME_SECONDS and is renewed at every sign-in, so one planted or seen before a
 * sign-in does not work after it.
 */
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { APPLICATIONS_PATH, csrfOf } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import type { Step, TestClient } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { SETTINGS_PATH } from '../helpers/settings-page.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';
import { CSRF_LIFETIME_SECONDS } from '../../src/ui/csrf.js';

let t: TestApp;
let client: TestClient;
let alice: Awaited<ReturnType<typeof createUser>>;
const logged: unknown[] = [];

beforeAll(async () => {
  t = await startTestApp({ log: (error) => logged.push(error) });
  client = await registerClient(t);
  alice = await createUser(t);
});
afterAll(async () => { await t?.close(); });

const authorizePath = () => `/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`;

/** The action of the first form on `page` whose action ends with `suffix`. */
function actionOf(page: { body: string }, suffix: string): string {
  const action = [...page.body.matchAll(/<form[^>]*action="([^"]*)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&')).find((a) => a.endsWith(suffix) || a.includes(suffix));
  if (!action) throw new Error(`no form posting to ${suffix}:\n${page.body}`);
  return action;
}

/** Every form of the service: a browser on the page that shows it, where it posts, and the fields besides `_csrf`. */
const FORMS: Record<string, () => Promise<{ browser: Browser; page: Step; action: string; fields: Record<string, string> }>> = {
  'registration': async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.request('/api/register.php');
    return { browser, page, action: '/api/register.php', fields: { client_name: 'X', redirect_uri: 'https://x.example/cb' } };
  },
  'login': async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.follow(authorizePath());
    return { browser, page, action: actionOf(page, '/login'), fields: { username: alice.username, password: alice.password } };
  },
  'login cancel': async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.follow(authorizePath());
    return { browser, page, action: actionOf(page, '/abort'), fields: {} };
  },
  'consent allow': async () => {
    const browser = new Browser(t.baseUrl);
    const login = await browser.follow(authorizePath());
    const page = await browser.submit(login, '/login', { username: alice.username, password: alice.password });
    return { browser, page, action: actionOf(page, '/confirm'), fields: {} };
  },
  'consent deny': async () => {
    const browser = new Browser(t.baseUrl);
    const login = await browser.follow(authorizePath());
    const page = await browser.submit(login, '/login', { username: alice.username, password: alice.password });
    return { browser, page, action: actionOf(page, '/abort'), fields: {} };
  },
  'applications sign-in': async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.request(APPLICATIONS_PATH);
    return { browser, page, action: APPLICATIONS_PATH, fields: { action: 'sign_in', username: alice.username, password: alice.password } };
  },
  'settings sign-in': async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.request(SETTINGS_PATH);
    return { browser, page, action: actionOf(page, 'action=sign_in'), fields: { client_id: client.client_id, client_secret: client.client_secret } };
  },
};

describe.each(Object.keys(FORMS))('the %s form', (name) => {
  test('a token of the right length in characters but not in bytes is refused like any wrong one: 403 page, nothing logged', async () => {
    const { browser, page, action, fields } = await FORMS[name]!();
    const token = csrfOf(page);
    expect(token.length).toBeGreaterThan(20);
    const before = logged.length;
    for (const forged of ['é'.repeat(token.length), `${token.slice(0, -1)}é`, '€'.repeat(token.length), '😀'.repeat(token.length / 2)]) {
      const res = await browser.request(action, { form: { ...fields, _csrf: forged } });
      expect({ forged, status: res.status }).toEqual({ forged, status: 403 });
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    }
    expect(logged.slice(before)).toEqual([]);
  });
});

describe('lifetime', () => {
  afterAll(() => { jest.restoreAllMocks(); });

  test('a token is refused once CSRF_LIFETIME_SECONDS have passed; the page then gives a new one', async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.request('/api/register.php');
    const token = csrfOf(page);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now');
    clock.mockReturnValue(now + (CSRF_LIFETIME_SECONDS + 5) * 1000);
    const late = await browser.request('/api/register.php', { form: { client_name: 'Late', redirect_uri: 'https://x.example/cb', _csrf: token } });
    expect(late.status).toBe(403);
    const again = await browser.request('/api/register.php');
    const renewed = csrfOf(again);
    expect(renewed).not.toBe(token);
    const res = await browser.request('/api/register.php', { form: { client_name: 'On time', redirect_uri: 'https://x.example/cb', _csrf: renewed } });
    expect(res.status).toBe(201);
    expect(res.body).toContain('id="client_secret"');
    clock.mockRestore();
  });

  test('a page shown when the token is older than half its lifetime gives a new one', async () => {
    const browser = new Browser(t.baseUrl);
    const token = csrfOf(await browser.request('/api/register.php'));
    expect(csrfOf(await browser.request('/api/register.php'))).toBe(token);
    const clock = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + (CSRF_LIFETIME_SECONDS / 2 + 5) * 1000);
    const renewed = csrfOf(await browser.request('/api/register.php'));
    expect(renewed).not.toBe(token);
    clock.mockRestore();
  });
});

describe('renewed at sign-in', () => {
  test('the login page: the token before the sign-in no longer works after it', async () => {
    const browser = new Browser(t.baseUrl);
    const login = await browser.follow(authorizePath());
    const before = csrfOf(login);
    const consent = await browser.submit(login, '/login', { username: alice.username, password: alice.password });
    expect(consent.body).toContain('id="approve"');
    const after = csrfOf(consent);
    expect(after).not.toBe(before);
    const stale = await browser.request(actionOf(consent, '/confirm'), { form: { _csrf: before } });
    expect(stale.status).toBe(403);
  });

  test('the applications page: likewise', async () => {
    const browser = new Browser(t.baseUrl);
    const before = csrfOf(await browser.request(APPLICATIONS_PATH));
    const signedIn = await browser.request(APPLICATIONS_PATH, { form: { _csrf: before, action: 'sign_in', username: alice.username, password: alice.password } });
    expect(signedIn.status).toBe(303);
    const page = await browser.request(APPLICATIONS_PATH);
    expect(csrfOf(page)).not.toBe(before);
    expect((await browser.request(APPLICATIONS_PATH, { form: { _csrf: before, action: 'sign_out' } })).status).toBe(403);
  });

  test('the settings page: likewise', async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.request(SETTINGS_PATH);
    const before = csrfOf(page);
    const res = await browser.request(actionOf(page, 'action=sign_in'), { form: { _csrf: before, client_id: client.client_id, client_secret: client.client_secret } });
    expect(res.status).toBe(303);
    const signedIn = await browser.request(res.location!);
    expect(csrfOf(signedIn)).not.toBe(before);
  });
});
