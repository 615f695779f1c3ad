/**
 * What survives a restart of the service on the same data. Users, clients and issued tokens
 * are durable in both modes. Login sessions live in Redis when REDIS_URL is set, so they
 * survive; without Redis they live in process memory, so a restart logs everyone out (the
 * README documents this).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { openEmbeddedPostgres } from '../src/store/embedded-postgres.js';
import { Browser } from './helpers/browser.js';
import type { TestClient, TestUser } from './helpers/browser.js';
import { createUser, registerClient, tokenRequest, userinfo } from './helpers/fixtures.js';
import { startTestApp } from './helpers/test-app.js';
import type { Mode, TestApp } from './helpers/test-app.js';

function authorizeUrl(client: TestClient): string {
  return `/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`;
}

const isLoginPage = (body: string) => /<form[^>]*action="\/interaction\/[^"]*\/login"/.test(body);

async function redeem(t: TestApp, client: TestClient, redirect: URL): Promise<string> {
  const code = redirect.searchParams.get('code');
  expect(code).toBeTruthy();
  const token = await tokenRequest(t, { code: code!, client_id: client.client_id, client_secret: client.client_secret });
  expect(token.status).toBe(200);
  return token.body.access_token as string;
}

describe.each<Mode>(['postgres', 'embedded'])('a restart (%s)', (mode) => {
  let t: TestApp;
  let user: TestUser & { email: string };
  let client: TestClient;
  let accessToken: string;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestApp({ mode });
    user = await createUser(t, { email: 'persist@example.com' });
    client = await registerClient(t);
    browser = new Browser(t.baseUrl);
    accessToken = await redeem(t, client, await browser.authorize(client, user));
    expect((await userinfo(t, `Bearer ${accessToken}`)).status).toBe(200);

    await t.close({ keepData: true });
    t = await startTestApp({ mode, reuse: t.env });
  });
  afterAll(async () => { await t?.close(); });

  test('keeps users: the same password still logs in', async () => {
    expect(await t.app.users.authenticate(user.username, user.password)).toMatchObject({ email: 'persist@example.com' });
  });

  test('keeps clients: the client still authenticates at the token endpoint', async () => {
    const redirect = await new Browser(t.baseUrl).authorize(client, user);
    expect(await redeem(t, client, redirect)).toEqual(expect.any(String));
  });

  test('keeps issued access tokens: userinfo still answers', async () => {
    const profile = await userinfo(t, `Bearer ${accessToken}`);
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({ username: user.username, email: 'persist@example.com' });
  });

  if (mode === 'postgres') {
    test('keeps login sessions (Redis): the same browser gets a code without logging in', async () => {
      const redirect = await browser.authorize(client, undefined);
      const token = await redeem(t, client, redirect);
      expect((await userinfo(t, `Bearer ${token}`)).body).toMatchObject({ username: user.username });
    });
  } else {
    test('loses login sessions (process memory): the same browser sees the login page again', async () => {
      const page = await browser.follow(authorizeUrl(client));
      expect(page.status).toBe(200);
      expect(isLoginPage(page.body)).toBe(true);
    });
  }
});

describe('the embedded database of a running app', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp({ mode: 'embedded' }); });
  afterAll(async () => { await t?.close(); });

  test("cannot be opened a second time while the app runs ('in use'), and the app keeps its lock", async () => {
    const lockFile = path.join(t.config.dataDir, 'pglite.lock');
    expect(fs.readFileSync(lockFile, 'utf8')).toBe(String(process.pid));

    await expect(openEmbeddedPostgres(t.config.dataDir)).rejects.toThrow('in use');

    expect(fs.readFileSync(lockFile, 'utf8')).toBe(String(process.pid));
    expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
  });

  test('can be opened once the app has stopped', async () => {
    await t.close({ keepData: true });
    const embedded = await openEmbeddedPostgres(t.config.dataDir);
    await embedded.close();
    t = await startTestApp({ mode: 'embedded', reuse: t.env });
  });
});
