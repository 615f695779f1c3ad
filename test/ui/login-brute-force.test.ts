/**
 * Brute force at the login page, with the default rules (src/accounts/login-guard.ts): 10
 * consecutive failures of one username from one address block that pair for 15 minutes; 100
 * failures from one address in a day block the address; the page says when to try again; the
 * same user from another address still logs in. The app trusts a proxy, so each browser speaks
 * from its own address through X-Forwarded-For.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { LOGIN_LIMITS } from '../../src/accounts/login-guard.js';
import { Browser } from '../helpers/browser.js';
import type { Step, TestClient } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

type Page = Step & { url: string };

const errorText = (page: Page) => /id="error"[^>]*>([^<]*)</.exec(page.body)?.[1];

describe('login brute force (default rules)', () => {
  let t: TestApp;
  let client: TestClient;
  let alice: Awaited<ReturnType<typeof createUser>>;

  beforeAll(async () => {
    t = await startTestApp({ env: { TRUST_PROXY: 'true' } });
    client = await registerClient(t);
    alice = await createUser(t);
  });
  afterAll(async () => { await t?.close(); });

  async function loginPage(address: string): Promise<{ browser: Browser; page: Page }> {
    const browser = new Browser(t.baseUrl, { origin: t.baseUrl, headers: { 'x-forwarded-for': address } });
    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' });
    const page = await browser.follow(`/api/authorize.php?${query}`);
    expect(page.body).toContain('name="password"');
    return { browser, page };
  }

  /** Posts the login form of `page` again and again (each answer is the form again). */
  async function fail(browser: Browser, page: Page, username: string, times: number): Promise<Page> {
    let current = page;
    for (let i = 0; i < times; i += 1) {
      current = await browser.submit(current, '/login', { username, password: 'wrong password!' });
      expect(current.status).toBe(401);
    }
    return current;
  }

  test('the 10th consecutive failure blocks the pair; the page says when to try again; even the right password is refused', async () => {
    expect(LOGIN_LIMITS).toMatchObject({ failuresPerPair: 10, pairBlockSeconds: 900 });
    const { browser, page } = await loginPage('203.0.113.10');
    const ninth = await fail(browser, page, alice.username, 9);
    expect(errorText(ninth)).toBe('Incorrect username or password.');

    const tenth = await browser.submit(ninth, '/login', { username: alice.username, password: 'wrong password!' });
    expect(tenth.status).toBe(429);
    expect(tenth.headers.get('retry-after')).toBe('900');
    expect(errorText(tenth)).toBe('Incorrect username or password. Too many failed sign-in attempts. Try again in 15 minutes.');

    const right = await browser.submit(tenth, '/login', { username: alice.username, password: alice.password });
    expect(right.status).toBe(429);
    expect(right.location).toBeUndefined(); // not logged in
    expect(right.headers.get('content-type')).toMatch(/^text\/html/);
    expect(errorText(right)).toMatch(/^Too many failed sign-in attempts\. Try again in 1[45] minutes\.$/);
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(800);
    expect(right.body).toContain('name="password"'); // the form, to try again later
  });

  test('the same user from another address still logs in (no lockout of victims)', async () => {
    const { browser, page } = await loginPage('203.0.113.11');
    const consent = await browser.submit(page, '/login', { username: alice.username, password: alice.password });
    expect(consent.status).toBe(200);
    expect(consent.body).toContain('id="approve"');
  });

  test('a success resets the pair', async () => {
    const first = await loginPage('203.0.113.12');
    const ninth = await fail(first.browser, first.page, alice.username, 9);
    const consent = await first.browser.submit(ninth, '/login', { username: alice.username, password: alice.password });
    expect(consent.body).toContain('id="approve"');

    const again = await loginPage('203.0.113.12');
    const failures = await fail(again.browser, again.page, alice.username, 9);
    expect(errorText(failures)).toBe('Incorrect username or password.');
  });

  test('100 failures from one address in a day (any usernames) block the address; other addresses are unaffected', async () => {
    expect(LOGIN_LIMITS.failuresPerAddressPerDay).toBe(100);
    const { browser, page } = await loginPage('203.0.113.13');
    let current = page;
    for (let i = 1; i < 100; i += 1) {
      current = await browser.submit(current, '/login', { username: `guess${i % 50}`, password: `wrong password ${i}` });
      expect(current.status).toBe(401);
    }
    const hundredth = await browser.submit(current, '/login', { username: 'guess-last', password: 'wrong password!' });
    expect(hundredth.status).toBe(429);
    expect(errorText(hundredth)).toMatch(/Try again in 24 hours\.$/);

    const right = await browser.submit(hundredth, '/login', { username: alice.username, password: alice.password });
    expect(right.status).toBe(429);
    expect(errorText(right)).toMatch(/^Too many failed sign-in attempts\. Try again in (23|24) hours\.$/);

    const elsewhere = await loginPage('203.0.113.14');
    expect((await elsewhere.browser.submit(elsewhere.page, '/login', { username: alice.username, password: alice.password })).body).toContain('id="approve"');
  }, 120_000);
});
