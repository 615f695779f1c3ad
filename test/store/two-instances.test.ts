/**
 * Two service instances on the same PostgreSQL and Redis behave as one.
 * Whatever either instance keeps for speed (store/request-state.ts keeps reads for one request
 * only), a change made on A is seen by B on the very next request, and Redis is never the only
 * copy of anything issued.
 *
 * @see RFC 6749 §4.1.2 (a code is used once), RFC 7009 §2.1 (revocation), RFC 9700 §4.14.2
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser, obtainCode } from '../helpers/browser.js';
import type { Step, TestClient, TestUser } from '../helpers/browser.js';
import { createUser, expectErrorResponse, obtainTokens, postForm, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { startRedisServer } from '../helpers/redis-server.js';
import type { RedisServer } from '../helpers/redis-server.js';
import { secondInstance, startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const redeem = (t: TestApp, client: TestClient, code: string) => tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret });
const refresh = (t: TestApp, client: TestClient, refreshToken: string, secret = client.client_secret) =>
  tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, client_secret: secret });

describe('two instances on one PostgreSQL and one Redis', () => {
  let a: TestApp;
  let b: TestApp;
  let user: TestUser;
  let client: TestClient;
  beforeAll(async () => {
    a = await startTestApp();
    b = await secondInstance(a);
    user = await createUser(a);
    client = await registerClient(a);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  test('a code redeemed in parallel on both instances is redeemed exactly once (5 rounds of 12)', async () => {
    for (let round = 0; round < 5; round += 1) {
      const code = await obtainCode(a.baseUrl, client, user);
      const responses = await Promise.all(Array.from({ length: 12 }, (_, i) => redeem(i % 2 ? b : a, client, code)));
      expect({ round, granted: responses.filter((res) => res.status === 200).length }).toEqual({ round, granted: 1 });
      for (const res of responses.filter((r) => r.status !== 200)) expectErrorResponse(res, 400, 'invalid_code');
    }
  });

  test('an access token revoked on A fails at userinfo on B on the very next request', async () => {
    const tokens = await obtainTokens(a, client, user);
    const bearer = `Bearer ${tokens.access_token}`;
    expect((await userinfo(b, bearer)).status).toBe(200);
    expect((await userinfo(b, bearer)).status).toBe(200);
    const revoked = await postForm(a, '/api/revoke.php', { token: tokens.access_token, client_id: client.client_id, client_secret: client.client_secret });
    expect(revoked.status).toBe(200);
    expectErrorResponse(await userinfo(b, bearer), 401, 'invalid_token');
  });

  test('a client secret rotated on A with no grace fails on B at once; the new one works there', async () => {
    const own = await registerClient(a);
    const code = await obtainCode(a.baseUrl, own, user);
    const first = await redeem(b, own, code); // B has used the old secret
    expect(first.status).toBe(200);

    const browser = new Browser(a.baseUrl);
    const page = await browser.request('/api/settings.php');
    const signedIn = await postSettings(browser, page, 'sign_in', { client_id: own.client_id, client_secret: own.client_secret });
    const rotated = await postSettings(browser, signedIn, 'rotate_secret', { grace: '0' });
    const newSecret = /id="new_client_secret"[^>]*>([^<]*)</.exec(rotated.body)?.[1];
    expect(newSecret).toBeDefined();

    const old = await refresh(b, own, first.body.refresh_token as string);
    expectErrorResponse(old, 401, 'invalid_client');
    const renewed = await refresh(b, own, first.body.refresh_token as string, newSecret);
    expect(renewed.status).toBe(200);
  });

  test("a grant revoked on A (the user's applications page) ends its refresh token on B at once", async () => {
    const tokens = await obtainTokens(a, client, user);
    const onB = await refresh(b, client, tokens.refresh_token);
    expect(onB.status).toBe(200);

    const browser = new Browser(a.baseUrl);
    const page = await browser.request('/api/applications.php');
    const csrf = (step: Step) => /name="_csrf" value="([^"]*)"/.exec(step.body)?.[1] ?? '';
    expect((await browser.request('/api/applications.php', { form: { _csrf: csrf(page), action: 'sign_in', username: user.username, password: user.password } })).status).toBe(303);
    const list = await browser.request('/api/applications.php');
    const revoke = await browser.request('/api/applications.php', { form: { _csrf: csrf(list), action: 'revoke', client_id: client.client_id } });
    expect(revoke.status).toBe(303);

    expectErrorResponse(await refresh(b, client, onB.body.refresh_token as string), 400, 'invalid_grant');
    expectErrorResponse(await userinfo(b, `Bearer ${onB.body.access_token}`), 401, 'invalid_token');
  });
});

/** Posts the settings page's form whose action is `action=<name>`, with its CSRF token; follows its redirect. */
async function postSettings(browser: Browser, page: Step, name: string, fields: Record<string, string> = {}): Promise<Step> {
  const unescape = (html: string) => html.replaceAll('&amp;', '&');
  const form = [...page.body.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)]
    .find((m) => new URL(unescape(m[1]!), browser.baseUrl).searchParams.get('action') === name);
  if (!form) throw new Error(`no ${name} form on the page:\n${page.body}`);
  const csrf = /name="_csrf" value="([^"]*)"/.exec(form[2]!)![1]!;
  const step = await browser.request(unescape(form[1]!), { form: { _csrf: csrf, ...fields } });
  return step.status === 303 && step.location ? browser.request(step.location) : step;
}

describe('a Redis restart under two instances', () => {
  let redis: RedisServer;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    redis = await startRedisServer();
    a = await startTestApp({ env: { REDIS_URL: redis.url } });
    b = await secondInstance(a);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await redis?.stop();
  });

  test('loses nothing issued: tokens from before the restart work on both instances, codes still redeem once', async () => {
    const user = await createUser(a);
    const client = await registerClient(a);
    const tokens = await obtainTokens(a, client, user);
    const code = await obtainCode(a.baseUrl, client, user);

    await redis.kill();
    await redis.restart(); // empty: sessions, interactions and counters are gone
    for (let i = 0; i < 50 && a.app.redis!.status !== 'ready'; i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    for (let i = 0; i < 50 && b.app.redis!.status !== 'ready'; i += 1) await new Promise((resolve) => setTimeout(resolve, 100));

    expect((await userinfo(b, `Bearer ${tokens.access_token}`)).status).toBe(200);
    expect((await userinfo(a, `Bearer ${tokens.access_token}`)).status).toBe(200);
    expect((await redeem(b, client, code)).status).toBe(200);
    expectErrorResponse(await redeem(a, client, code), 400, 'invalid_code');
    const renewed = await refresh(b, client, tokens.refresh_token);
    expect(renewed.status).toBe(200);
    expect((await userinfo(a, `Bearer ${renewed.body.access_token}`)).status).toBe(200);
  });
});
