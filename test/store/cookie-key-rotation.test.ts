/**
 * COOKIE_KEYS rotation on two instances on one PostgreSQL and Redis, as docs/rotating-credentials.md
 * tells it: the first key signs, every key listed verifies (Koa's keygrip). (1) The new key is
 * added second everywhere; (2) it is moved first, instance by instance; (3) the old key is removed
 * once no session it signed can still be alive. Sessions signed with the old key (the provider's
 * login session, the settings page's and the applications page's) keep working on every instance
 * through steps 1 and 2, whatever instance a request reaches mid-rollout; the login session is
 * re-signed with the new key when used. A browser idle since before step 2 signs in again after
 * step 3. Skipping step 1 loses login sessions: an instance that knows only the old key refuses
 * what the other signed with the new one.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { signInOnApplicationsPage } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { signInOnSettingsPage } from '../helpers/settings-page.js';
import { secondInstance, startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const OLD = randomBytes(32).toString('base64url');
const NEW = randomBytes(32).toString('base64url');

/** The signature keygrip gives `name=value` under `key` (HMAC-SHA1, base64url): what a `.sig` cookie holds. */
const signature = (key: string, name: string, value: string) => createHmac('sha1', key).update(`${name}=${value}`).digest('base64url');

/** The key that signed the last `name` cookie this browser was sent, by its `.sig` cookie. */
function signedWith(browser: Browser, name: string): 'old' | 'new' | 'neither' {
  const last = (cookie: string) => browser.setCookies.filter((line) => line.startsWith(`${cookie}=`)).at(-1)?.split(';')[0]!.slice(cookie.length + 1) ?? '';
  const [value, sig] = [last(name), last(`${name}.sig`)];
  return sig === signature(OLD, name, value) ? 'old' : sig === signature(NEW, name, value) ? 'new' : 'neither';
}

/** A restart of `t` on the same port and data with COOKIE_KEYS set to `keys`, newest first. */
async function restart(t: TestApp, keys: string[]): Promise<TestApp> {
  await t.close({ keepData: true });
  const next = await startTestApp({ reuse: { ...t.env, COOKIE_KEYS: keys.join(',') } });
  return { ...next, baseUrl: `http://localhost:${t.env.PORT}` };
}

describe('COOKIE_KEYS rotation on two instances', () => {
  let a: TestApp;
  let b: TestApp;
  let client: TestClient;
  let user: TestUser;
  beforeAll(async () => {
    a = await startTestApp({ env: { COOKIE_KEYS: OLD } });
    b = await secondInstance(a);
    client = await registerClient(a);
    user = await createUser(a);
  });
  afterAll(async () => {
    await b?.close({ keepData: true });
    await a?.close();
  });

  /** A silent authorization (prompt=none) on `t`: `code` while the login session works, else the error. */
  async function silently(browser: Browser, t: TestApp): Promise<string> {
    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', prompt: 'none' });
    let step = await browser.request(`${t.baseUrl}/api/authorize.php?${query}`);
    for (let hop = 0; hop < 5 && step.location && !step.location.startsWith(client.redirect_uri); hop += 1) step = await browser.request(step.location);
    const redirect = new URL(step.location ?? 'about:blank');
    return redirect.searchParams.has('code') ? 'code' : redirect.searchParams.get('error') ?? `status ${step.status}`;
  }

  /** Whether each session of the browser works on `t`: login (silent authorization), settings page, applications page. */
  async function sessionsOn(browser: Browser, t: TestApp) {
    const settings = await browser.request(`${t.baseUrl}/api/settings.php`);
    const applications = await browser.request(`${t.baseUrl}/api/applications.php`);
    return {
      login: await silently(browser, t),
      settings: settings.body.includes('id="sign_out_button"') ? 'signed in' : 'signed out',
      applications: applications.body.includes('id="sign_out"') ? 'signed in' : 'signed out',
    };
  }
  const working = { login: 'code', settings: 'signed in', applications: 'signed in' };

  /**
   * A browser signed in everywhere on `t`. Both instances answer as BASE_URL (one balancer in
   * front of them): this browser's requests to it, redirects included, reach `t`.
   */
  async function signedInBrowser(t: TestApp): Promise<Browser> {
    const browser = new Browser(t.env.BASE_URL!, { origin: t.baseUrl, headers: {} });
    expect((await browser.authorize(client, user)).searchParams.get('code')).toBeTruthy();
    await signInOnSettingsPage(browser, client);
    await signInOnApplicationsPage(browser, user);
    return browser;
  }

  test('sessions signed with the old key work on every instance through the rollout; the old key goes last', async () => {
    const used = await signedInBrowser(a); // used at every step
    const idle = await signedInBrowser(b); // used once the new key signs everywhere
    const forgotten = await signedInBrowser(a); // not used again until the old key is gone
    expect([signedWith(used, '_session'), signedWith(idle, '_session')]).toEqual(['old', 'old']);

    // 1. The new key is added second, instance by instance: the old one still signs.
    a = await restart(a, [OLD, NEW]);
    for (const t of [a, b]) expect(await sessionsOn(used, t)).toEqual(working);
    b = await restart(b, [OLD, NEW]);
    for (const t of [b, a]) expect(await sessionsOn(used, t)).toEqual(working);
    expect(signedWith(used, '_session')).toBe('old');

    // 2. The new key is moved first, instance by instance: A signs with it while B still signs with the old one.
    a = await restart(a, [NEW, OLD]);
    expect(await sessionsOn(used, a)).toEqual(working);
    expect(signedWith(used, '_session')).toBe('new'); // re-signed on use
    expect(await sessionsOn(used, b)).toEqual(working); // B accepts what A now signs
    b = await restart(b, [NEW, OLD]);
    expect(signedWith(idle, '_session')).toBe('old');
    for (const t of [b, a]) {
      expect(await sessionsOn(used, t)).toEqual(working);
      expect(await sessionsOn(idle, t)).toEqual(working); // signed with the old key, still working everywhere
    }
    expect(signedWith(idle, '_session')).toBe('new');
    const fresh = await signedInBrowser(b);
    expect(signedWith(fresh, '_session')).toBe('new');
    expect(await sessionsOn(fresh, a)).toEqual(working);

    // 3. The old key is removed (in earnest only once every cookie it signed has expired: the login
    // session's lasts 14 days). What was signed since works everywhere, and the login session
    // re-signed on use. The settings page's session keeps the signature it was set with (its
    // cookie is scoped to its page's path, and a `.sig` re-signed on read goes to path /): it lasts
    // 15 minutes, so it ended long before; here, signed with the old key, it ends now.
    a = await restart(a, [NEW]);
    b = await restart(b, [NEW]);
    for (const t of [a, b]) {
      expect(await sessionsOn(fresh, t)).toEqual(working);
      expect(await sessionsOn(used, t)).toEqual({ ...working, settings: 'signed out' });
    }
    // A browser idle since before step 2 signs in again.
    expect(await sessionsOn(forgotten, a)).toEqual({ login: 'login_required', settings: 'signed out', applications: 'signed out' });
    expect((await forgotten.authorize(client, user)).searchParams.get('code')).toBeTruthy();
  }, 120_000);

  test('skipping step 1 loses login sessions mid-rollout: an instance with only the old key refuses what the other signed with the new one', async () => {
    a = await restart(a, [OLD]);
    b = await restart(b, [OLD]);
    const browser = await signedInBrowser(a);
    a = await restart(a, [NEW, OLD]);
    expect(await sessionsOn(browser, a)).toEqual(working);
    expect(signedWith(browser, '_session')).toBe('new'); // re-signed on use
    expect((await sessionsOn(browser, b)).login).toBe('login_required');
  }, 60_000);
});
