/**
 * Logout in a real browser (Debian's Chromium driven by playwright-core), in both modes: a user
 * signs in to two applications, one of them (registered on the registration page, with its
 * logout URIs) signs them out with id_token_hint; the user confirms on our page and lands back
 * on the application with its `state`. Then the other application's prompt=none gets
 * login_required; a local receiver gets each application's logout token, which verifies against
 * the JWKS, and gets it again after answering 500 once; the refresh token with offline_access
 * still works, the one without does not.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { createUser, registerDynamicClient, tokenRequest } from '../helpers/fixtures.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Hit, Receiver } from '../helpers/receiver.js';
import { CHROMIUM, describeWith, program } from '../helpers/system-tool.js';
import { startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

const withChromium = describeWith(CHROMIUM);

const logoutTokenOf = (hit: Hit) => new URLSearchParams(hit.body).get('logout_token') ?? '';

withChromium('logout in a real browser (Chromium)', () => {
  let browser: Browser;
  let site: http.Server;
  let origin: string;

  beforeAll(async () => {
    // The applications' site: every page a plain one naming its URL.
    site = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>site</title><p id="at">${(req.url ?? '').replace(/[<&]/g, '')}</p>`);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: program(CHROMIUM), headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  });

  afterAll(async () => {
    await browser?.close();
    site?.closeAllConnections();
    await new Promise((resolve) => site?.close(resolve));
  });

  describe.each<Mode>(['postgres', 'embedded'])('%s', (mode) => {
    let t: TestApp;
    let receiver: Receiver;

    beforeAll(async () => {
      receiver = await startReceiver();
      t = await startTestApp({ mode, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '100' } });
    });
    afterAll(async () => {
      await t?.close();
      await receiver?.close();
    });

    /** Authorizes in the page (signing in if asked, approving), returns the code the application received. */
    async function authorize(page: Page, client: { client_id: string; redirect_uri: string }, user: { username: string; password: string }, params: Record<string, string> = {}) {
      await page.goto(`${t.baseUrl}/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', state: 'az', ...params })}`);
      if (await page.$('#username')) {
        await page.fill('#username', user.username);
        await page.fill('#password', user.password);
        await Promise.all([page.waitForEvent('framenavigated'), page.click('#login')]);
        await page.waitForLoadState('domcontentloaded');
      }
      if (await page.$('#approve')) await Promise.all([page.waitForURL((url) => url.origin === origin), page.click('#approve')]);
      const url = new URL(page.url());
      expect(url.origin).toBe(origin);
      return url;
    }

    async function exchange(client: { client_id: string; client_secret: string; redirect_uri: string }, url: URL) {
      const res = await tokenRequest(t, { grant_type: 'authorization_code', code: url.searchParams.get('code')!, redirect_uri: client.redirect_uri, client_id: client.client_id, client_secret: client.client_secret });
      expect(res.status).toBe(200);
      return res.body as { id_token: string; refresh_token: string };
    }

    test('sign in to two applications, sign out of one: the other must sign in again, both are told, offline_access survives', async () => {
      const user = await createUser(t);
      const context = await browser.newContext();
      context.setDefaultTimeout(5000);
      try {
        const page = await context.newPage();
        // A registers on the registration page, with its logout URIs.
        await page.goto(`${t.baseUrl}/api/register.php`);
        await page.fill('#client_name', 'App A');
        await page.fill('#redirect_uri', `${origin}/a/callback`);
        await page.fill('#post_logout_redirect_uri', `${origin}/a/signed-out`);
        await page.fill('#backchannel_logout_uri', receiver.url('/a/logout'));
        await page.click('#register');
        await page.waitForSelector('#client_secret');
        expect((await page.textContent('#post_logout_redirect_uri'))!.trim()).toBe(`${origin}/a/signed-out`);
        const a = { client_id: (await page.textContent('#client_id'))!.trim(), client_secret: (await page.textContent('#client_secret'))!.trim(), redirect_uri: `${origin}/a/callback` };
        // B through RFC 7591.
        const registered = await registerDynamicClient(t, {
          client_name: 'App B', redirect_uris: [`${origin}/b/callback`], grant_types: ['authorization_code', 'refresh_token'],
          token_endpoint_auth_method: 'client_secret_post', backchannel_logout_uri: receiver.url('/b/logout'),
        });
        const b = { client_id: registered.client_id, client_secret: registered.client_secret!, redirect_uri: `${origin}/b/callback` };

        // A without offline_access, B with it.
        const tokensA = await exchange(a, await authorize(page, a, user));
        const tokensB = await exchange(b, await authorize(page, b, user, { scope: 'openid offline_access', prompt: 'consent' }));
        const sidA = decodeJwt(tokensA.id_token).sid as string;
        const sidB = decodeJwt(tokensB.id_token).sid as string;
        expect(sidA).toBeTruthy();
        expect(sidB).toBeTruthy();

        // A's receiver fails once.
        let failedOnce = false;
        receiver.respond = (hit) => {
          if (hit.path !== '/a/logout' || failedOnce) return 200;
          failedOnce = true;
          return 500;
        };

        // A signs the user out; opening the page ends nothing.
        await page.goto(`${t.baseUrl}/api/logout.php?${new URLSearchParams({ id_token_hint: tokensA.id_token, post_logout_redirect_uri: `${origin}/a/signed-out`, state: 'bye-1' })}`);
        expect(await page.textContent('#client_name')).toBe('App A');
        await Promise.all([page.waitForURL((url) => url.origin === origin), page.click('#sign_out')]);
        const landed = new URL(page.url());
        expect(landed.pathname).toBe('/a/signed-out');
        expect(landed.searchParams.get('state')).toBe('bye-1');

        // B's prompt=none: login_required.
        await page.goto(`${t.baseUrl}/api/authorize.php?${new URLSearchParams({ client_id: b.client_id, redirect_uri: b.redirect_uri, response_type: 'code', prompt: 'none', state: 'silent' })}`);
        const silent = new URL(page.url());
        expect(silent.pathname).toBe('/b/callback');
        expect(silent.searchParams.get('error')).toBe('login_required');

        // Both told; A twice (after its 500); every token verifies against the JWKS.
        const jwks = createRemoteJWKSet(new URL(`${t.baseUrl}/api/jwks.php`));
        const forA = (h: Hit) => h.path === '/a/logout';
        await receiver.next((h) => forA(h) && receiver.hits.filter(forA).length >= 2);
        const hitB = await receiver.next((h) => h.path === '/b/logout');
        for (const [hit, client, sid] of [...receiver.hits.filter(forA).map((h) => [h, a, sidA] as const), [hitB, b, sidB] as const]) {
          const { payload } = await jwtVerify(logoutTokenOf(hit), jwks, { issuer: t.baseUrl, audience: client.client_id, typ: 'logout+jwt' });
          expect(payload).toMatchObject({ sid, sub: decodeJwt(tokensA.id_token).sub, events: { 'http://schemas.openid.net/event/backchannel-logout': {} } });
        }

        // B's refresh token (offline_access) still works; A's does not.
        const refreshB = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: tokensB.refresh_token, client_id: b.client_id, client_secret: b.client_secret });
        expect(refreshB.status).toBe(200);
        const refreshA = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: tokensA.refresh_token, client_id: a.client_id, client_secret: a.client_secret });
        expect(refreshA.status).toBe(400);
        expect(refreshA.body.error).toBe('invalid_grant');
      } finally {
        receiver.respond = () => 200;
        await context.close();
      }
    });
  });
});
