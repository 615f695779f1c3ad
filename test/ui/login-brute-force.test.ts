/**
 * Brute force at the login page, with the default rules (src/accounts/login-guard.ts): 5 free
 * failures of one username from one address, then growing delays (refused unchecked, with
 * `Retry-After` and the page saying when); a ceiling of 100 failures an address a day that
 * refuses only usernames that failed there; and the owner, in a browser where they signed in
 * before, never slowed by anyone else's failures, at the same address or not. The app trusts a
 * proxy, so each browser speaks from its own address through X-Forwarded-For.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { LOGIN_LIMITS } from '../../src/accounts/login-guard.js';
import { signInOnApplicationsPage } from '../helpers/applications-page.js';
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

  const browserAt = (address: string) => new Browser(t.baseUrl, { origin: t.baseUrl, headers: { 'x-forwarded-for': address } });

  async function loginPage(browser: Browser): Promise<Page> {
    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' });
    const page = await browser.follow(`/api/authorize.php?${query}`);
    expect(page.body).toContain('name="password"');
    return page;
  }

  /** Posts the login form of `page` again and again (each answer is the form again); returns the last answer. */
  async function fail(browser: Browser, page: Page, username: string, times: number): Promise<Page> {
    let current = page;
    for (let i = 0; i < times; i += 1) current = await browser.submit(current, '/login', { username, password: 'wrong password!' });
    return current;
  }

  /**
   * Wrong passwords as fast as they go until one is refused unchecked (429 without "Incorrect"):
   * the n-th attempt must come delay(6) + … + delay(n) after the first failure (15 s for the
   * 9th), so that happens by the 9th. Returns every answer.
   */
  async function hammer(browser: Browser, username: string): Promise<Page[]> {
    const answers: Page[] = [];
    let page = await loginPage(browser);
    for (let i = 0; i < 9 && !(answers.at(-1) && /^Too many/.test(errorText(answers.at(-1)!) ?? '')); i += 1) {
      page = await browser.submit(page, '/login', { username, password: 'wrong password!' });
      answers.push(page);
    }
    return answers;
  }

  test('5 failures are checked and answered as such; faster than the delays after them, an attempt is refused unchecked and told when; once that has passed the right password signs in', async () => {
    expect(LOGIN_LIMITS).toMatchObject({ freeFailures: 5, firstDelaySeconds: 1 });
    const browser = browserAt('203.0.113.10');
    const answers = await hammer(browser, alice.username);
    expect(answers.length).toBeGreaterThan(LOGIN_LIMITS.freeFailures);
    for (const answer of answers.slice(0, LOGIN_LIMITS.freeFailures)) expect(errorText(answer)).toMatch(/^Incorrect username or password\./);
    const refused = answers.at(-1)!;
    expect(refused.status).toBe(429);
    expect(errorText(refused)).toMatch(/^Too many failed sign-in attempts\. Try again in \d+ seconds?\.$/);

    const tooSoon = await browser.submit(refused, '/login', { username: alice.username, password: alice.password });
    expect(tooSoon.status).toBe(429);
    expect(tooSoon.location).toBeUndefined(); // not signed in
    expect(tooSoon.body).toContain('name="password"'); // the form, to try again
    const wait = Number(tooSoon.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(8);

    await new Promise((resolve) => setTimeout(resolve, wait * 1000 + 100));
    const consent = await browser.submit(tooSoon, '/login', { username: alice.username, password: alice.password });
    expect(consent.body).toContain('id="approve"');
  }, 60_000);

  test('an unknown username is answered in the same words, refusals included', async () => {
    const words = async (username: string) => {
      const answers = await hammer(browserAt(`203.0.113.${username === alice.username ? 13 : 14}`), username);
      return [answers[0]!.status, errorText(answers[0]!), answers.at(-1)!.status, errorText(answers.at(-1)!)?.replace(/\d+ seconds?/, 'N')];
    };
    expect(await words(`nobody-${Date.now()}`)).toEqual(await words(alice.username));
  }, 60_000);

  test('the same user from another address is not slowed', async () => {
    const browser = browserAt('203.0.113.12');
    const consent = await browser.submit(await loginPage(browser), '/login', { username: alice.username, password: alice.password });
    expect(consent.body).toContain('id="approve"');
  });

  test('an attacker and the owner at one address: whatever the attacker does to her username and to the address, the owner signs in; so does a colleague there', async () => {
    const office = '203.0.113.20';
    const owner = await createUser(t);
    const colleague = await createUser(t);
    // The owner signed in from her browser once (the applications page), before the attack.
    const ownersBrowser = browserAt(office);
    await signInOnApplicationsPage(ownersBrowser, owner);

    const attacker = browserAt(office);
    let page = await fail(attacker, await loginPage(attacker), owner.username, 10);
    expect(page.status).toBe(429);
    for (let i = 0; i < LOGIN_LIMITS.failuresPerAddressPerDay; i += 1) page = await fail(attacker, page, `guess-${i}`, 1);
    // The attacker's next guess at the owner's password: refused unchecked.
    const refused = await attacker.submit(page, '/login', { username: owner.username, password: owner.password });
    expect(refused.status).toBe(429);
    expect(refused.location).toBeUndefined();
    // A name that already failed here is refused, a day long.
    const again = await attacker.submit(refused, '/login', { username: 'guess-0', password: 'x' });
    expect(errorText(again)).toMatch(/^Too many failed sign-in attempts\. Try again in (23|24) hours\.$/);

    const owners = await ownersBrowser.submit(await loginPage(ownersBrowser), '/login', { username: owner.username, password: owner.password });
    expect(owners.body).toContain('id="approve"');
    const colleagues = browserAt(office);
    expect((await colleagues.submit(await loginPage(colleagues), '/login', { username: colleague.username, password: colleague.password })).body).toContain('id="approve"');
  }, 120_000);

  test('the audit row keeps the address itself, written one way; the guard counts an IPv6 address by its /64', async () => {
    const bob = await createUser(t);
    const browser = browserAt('2001:0db8:0001:0002:0000:0000:0000:0007');
    const failed = await fail(browser, await loginPage(browser), bob.username, 1);
    expect(errorText(failed)).toBe('Incorrect username or password.');
    const row = await t.app.db.prisma.auditEvent.findFirstOrThrow({ where: { event: 'login.failed', detail: { path: ['username'], equals: bob.username } } });
    expect(row.address).toBe('2001:db8:1:2::7');
    // Four more from elsewhere in that /64 are the same address to the guard: the sixth is refused.
    const neighbour = browserAt('2001:db8:1:2:ffff::9');
    const sixth = await fail(neighbour, await loginPage(neighbour), bob.username, 5);
    expect(errorText(sixth)).toMatch(/Too many failed sign-in attempts/);
    expect((await t.app.db.prisma.auditEvent.findMany({ where: { detail: { path: ['username'], equals: bob.username } } })).map((r) => r.address))
      .toContain('2001:db8:1:2:ffff::9');
  });
});
