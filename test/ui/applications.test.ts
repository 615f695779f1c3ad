/**
 * /api/applications.php: a signed-in user lists the applications they authorized and revokes
 * one; its tokens die; every form needs the CSRF token.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { APPLICATIONS_PATH as PATH, csrfOf, postApplicationsForm as post, signInOnApplicationsPage as signIn } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import type { Step, TestClient, TestUser } from '../helpers/browser.js';
import { createUser, expectErrorResponse, obtainTokens, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

/** The client ids listed on the page, in order. */
const listed = (page: Step) => [...page.body.matchAll(/data-client-id="([^"]*)"/g)].map((match) => match[1]);

describe.each<Mode>(['postgres', 'embedded'])('authorized applications page (%s)', (mode) => {
  let t: TestApp;
  let photos: TestClient;
  let notes: TestClient;
  let unused: TestClient;
  let alice: TestUser;
  let bob: TestUser;
  beforeAll(async () => {
    t = await startTestApp({ mode });
    photos = await registerClient(t, 'http://localhost:9999/callback', 'Photo App');
    notes = await registerClient(t, 'http://localhost:9998/callback', 'Notes App');
    unused = await registerClient(t, 'http://localhost:9997/callback', 'Unused App');
    alice = await createUser(t);
    bob = await createUser(t);
  });
  afterAll(async () => { await t.close(); });

  const refresh = (c: TestClient, refreshToken: string) =>
    tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: c.client_id, client_secret: c.client_secret });

  test('without a sign-in: the sign-in form; a wrong password: 401 and the form with an error', async () => {
    const browser = new Browser(t.baseUrl);
    const page = await browser.request(PATH);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.body).toContain('id="sign_in"');
    expect(listed(page)).toEqual([]);
    const wrong = await post(browser, 'sign_in', { username: alice.username, password: 'wrong password' });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toContain('Incorrect username or password.');
  });

  test('lists each application the user authorized once, with name, scopes and date; not others', async () => {
    const user = await createUser(t);
    await obtainTokens(t, photos, user);
    await obtainTokens(t, photos, user); // another browser: a second grant to the same client
    await obtainTokens(t, notes, user);
    await obtainTokens(t, unused, bob);

    const browser = new Browser(t.baseUrl);
    const page = await signIn(browser, user);
    expect(page.status).toBe(200);
    expect(listed(page)).toEqual([notes.client_id, photos.client_id]);
    expect(page.body).toContain('Photo App');
    expect(page.body).toContain('<code class="scopes">openid</code>');
    const since = /<time datetime="([^"]*)"/.exec(page.body)?.[1];
    expect(Math.abs(new Date(since!).getTime() - Date.now())).toBeLessThan(60_000);
    expect(page.body).not.toContain('Unused App');
  });

  test("revoking one: that client's tokens for this user die; other clients and users keep theirs", async () => {
    const user = await createUser(t);
    const mine = await obtainTokens(t, photos, user);
    const mineToo = await obtainTokens(t, photos, user);
    const otherApp = await obtainTokens(t, notes, user);
    const otherUser = await obtainTokens(t, photos, bob);

    const browser = new Browser(t.baseUrl);
    await signIn(browser, user);
    const res = await post(browser, 'revoke', { client_id: photos.client_id });
    expect(res.status).toBe(303);
    const after = await browser.request(res.location!);
    expect(after.body).toContain('id="revoked"');
    expect(listed(after)).toEqual([notes.client_id]);

    for (const tokens of [mine, mineToo]) {
      expectErrorResponse(await userinfo(t, `Bearer ${tokens.access_token}`), 401, 'invalid_token');
      expectErrorResponse(await refresh(photos, tokens.refresh_token), 400, 'invalid_grant');
    }
    expect((await userinfo(t, `Bearer ${otherApp.access_token}`)).status).toBe(200);
    expect((await refresh(photos, otherUser.refresh_token)).status).toBe(200);

    // Revoking it again: nothing left to revoke.
    const again = await post(browser, 'revoke', { client_id: photos.client_id });
    expect(again.status).toBe(404);
    expect(again.body).toContain('no access to your account');
  });

  test('the consent is gone too: the next authorization asks the user again', async () => {
    const user = await createUser(t);
    const browser = new Browser(t.baseUrl);
    expect((await browser.authorize(photos, user)).searchParams.get('code')).toBeTruthy();
    // Signed in by the authorization's login session.
    expect((await post(browser, 'revoke', { client_id: photos.client_id })).status).toBe(303);
    const again = await browser.follow(`/api/authorize.php?${new URLSearchParams({ client_id: photos.client_id, redirect_uri: photos.redirect_uri, response_type: 'code' })}`);
    expect(again.body).toContain('/confirm"');
  });

  test('every form needs the CSRF token: 403 and nothing changes', async () => {
    const user = await createUser(t);
    const tokens = await obtainTokens(t, photos, user);
    const browser = new Browser(t.baseUrl);
    await signIn(browser, user);
    expect((await post(browser, 'revoke', { client_id: photos.client_id }, 'forged')).status).toBe(403);
    expect((await browser.request(PATH, { form: { action: 'revoke', client_id: photos.client_id } })).status).toBe(403);
    expect((await userinfo(t, `Bearer ${tokens.access_token}`)).status).toBe(200);
    expect((await post(new Browser(t.baseUrl), 'sign_in', { username: user.username, password: user.password }, 'forged')).status).toBe(403);
  });

  test("the authorization's login session counts as signed in; Sign out ends it", async () => {
    const user = await createUser(t);
    const browser = new Browser(t.baseUrl);
    await browser.authorize(notes, user);
    const page = await browser.request(PATH);
    expect(listed(page)).toEqual([notes.client_id]);
    expect(page.body).toContain(user.username);

    expect((await post(browser, 'sign_out')).status).toBe(303);
    expect((await browser.request(PATH)).body).toContain('id="sign_in"');
    const authorize = await browser.follow(`/api/authorize.php?${new URLSearchParams({ client_id: notes.client_id, redirect_uri: notes.redirect_uri, response_type: 'code' })}`);
    expect(authorize.body).toContain('/login"');
  });

  test('the page sign-in is an HttpOnly, SameSite=Strict cookie bound to the page; without it revoke asks to sign in', async () => {
    const browser = new Browser(t.baseUrl);
    await signIn(browser, alice);
    const cookie = browser.setCookies.find((line) => line.startsWith('applications_session='));
    expect(cookie).toMatch(/path=\/api\/applications\.php/i);
    expect(cookie).toMatch(/httponly/i);
    expect(cookie).toMatch(/samesite=strict/i);

    const stranger = new Browser(t.baseUrl);
    const res = await post(stranger, 'revoke', { client_id: photos.client_id });
    expect(res.status).toBe(401);
    expect(res.body).toContain('id="sign_in"');
  });

  test('a tab left open on another account revokes nothing once this browser has signed in as someone else: 409', async () => {
    const carol = await createUser(t);
    const dave = await createUser(t);
    const [carolsTokens, davesTokens] = [await obtainTokens(t, photos, carol), await obtainTokens(t, photos, dave)];
    const browser = new Browser(t.baseUrl);
    const staleTab = await signIn(browser, carol);
    const shown = /name="for_user" value="([^"]*)"/.exec(staleTab.body)?.[1];
    expect(shown).toEqual(expect.any(String));
    const davesPage = await signIn(browser, dave); // another tab of the same browser
    // The stale tab's token was renewed at Dave's sign-in (ui/csrf.ts): 403.
    const stale = await browser.request(PATH, { form: { _csrf: csrfOf(staleTab), action: 'revoke', client_id: photos.client_id, for_user: shown! } });
    expect(stale.status).toBe(403);
    // And with this browser's token, the form naming Carol still revokes nothing.
    const res = await browser.request(PATH, { form: { _csrf: csrfOf(davesPage), action: 'revoke', client_id: photos.client_id, for_user: shown! } });
    expect(res.status).toBe(409);
    expect(res.body).toContain(`signed in as ${dave.username} since. Nothing was revoked`);
    for (const tokens of [carolsTokens, davesTokens]) expect((await userinfo(t, `Bearer ${tokens.access_token}`)).status).toBe(200);
  });

  test('an unknown action or a missing client_id: 400 page', async () => {
    const browser = new Browser(t.baseUrl);
    await signIn(browser, alice);
    expect((await post(browser, 'delete_everything')).status).toBe(400);
    expect((await post(browser, 'revoke')).status).toBe(400);
  });
});
