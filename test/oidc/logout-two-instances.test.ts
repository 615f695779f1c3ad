/**
 * Logout and accounts on two instances behind one proxy, as they are deployed: both answer as the
 * proxy's BASE_URL, on one PostgreSQL and one Redis, and the proxy hands each request to the next
 * instance in turn, so every flow's steps land on both. A logout confirmed on one instance ends the
 * session on both; each application is told once, though both instances' workers deliver; a
 * password reset asked on one is completed on the other and ends the user's other sessions.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { csrfOf } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { createUser, registerDynamicClient, tokenRequest } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';
import type { Mailbox } from '../helpers/mailbox.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { secondInstance, startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

/** A proxy that sends each request to the next of `targets` (filled in once the instances listen). */
async function roundRobin(): Promise<{ origin: string; targets: string[]; served: Map<string, number>; close(): Promise<void> }> {
  const targets: string[] = [];
  const served = new Map<string, number>();
  let next = 0;
  const server = http.createServer((req, res) => {
    const target = new URL(targets[next++ % targets.length]!);
    served.set(target.origin, (served.get(target.origin) ?? 0) + 1);
    const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://localhost:${(server.address() as AddressInfo).port}`,
    targets,
    served,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let proxy: Awaited<ReturnType<typeof roundRobin>>;
let receiver: Receiver;
let box: Mailbox;
let a: TestApp;
let b: TestApp;
beforeAll(async () => {
  proxy = await roundRobin();
  receiver = await startReceiver();
  box = await startMailbox();
  a = await startTestApp({ env: { BASE_URL: proxy.origin, SMTP_URL: box.url, MAIL_RETRY_BASE_MS: '200', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '100' } });
  b = await secondInstance(a);
  proxy.targets.push(`http://localhost:${a.env.PORT}`, `http://localhost:${b.env.PORT}`);
}, 120_000);
afterAll(async () => {
  await b?.close();
  await a?.close();
  await proxy?.close();
  await receiver?.close();
  await box?.close();
});

interface Tokens { id_token: string; refresh_token: string }

async function application(name: string): Promise<TestClient> {
  const registered = await registerDynamicClient(a, {
    client_name: name, redirect_uris: [`http://localhost:9999/${name}/callback`], grant_types: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_method: 'client_secret_post',
    post_logout_redirect_uris: [`http://localhost:9999/${name}/bye`], backchannel_logout_uri: receiver.url(`/${name}/backchannel`),
  });
  return { client_id: registered.client_id, client_secret: registered.client_secret!, redirect_uri: `http://localhost:9999/${name}/callback` };
}

async function signIn(browser: Browser, client: TestClient, user: TestUser): Promise<Tokens> {
  const code = (await browser.authorize(client, user)).searchParams.get('code');
  expect(code).toBeTruthy();
  const res = await tokenRequest(a, { grant_type: 'authorization_code', code: code!, redirect_uri: client.redirect_uri, client_id: client.client_id, client_secret: client.client_secret });
  expect(res.status).toBe(200);
  return res.body as unknown as Tokens;
}

const settled = async (what: () => Promise<number>) => {
  for (let i = 0; i < 200 && await what() > 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(await what()).toBe(0);
};

test('a logout confirmed through the proxy ends the session on both instances; each application is told once', async () => {
  const user = await createUser(a);
  const [one, two] = [await application('one'), await application('two')];
  const browser = new Browser(proxy.origin);
  const tokensOne = await signIn(browser, one, user);
  const tokensTwo = await signIn(browser, two, user);

  const page = await browser.follow(`/api/logout.php?${new URLSearchParams({ id_token_hint: tokensOne.id_token, post_logout_redirect_uri: 'http://localhost:9999/one/bye', state: 's1' })}`);
  expect(page.status).toBe(200);
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)![1]!;
  const confirmed = await browser.request('/api/logout.php/confirm', { form: { xsrf, logout: 'yes' } });
  expect(confirmed.status).toBe(303);
  expect(new URL(confirmed.location!).searchParams.get('state')).toBe('s1');

  // Whichever instance answers: the session is over.
  for (let i = 0; i < 2; i += 1) expect((await browser.authorize(two, undefined, { prompt: 'none' })).searchParams.get('error')).toBe('login_required');
  await settled(() => a.app.db.prisma.backchannelLogout.count({ where: { status: 'pending' } }));
  for (const [name, tokens] of [['one', tokensOne], ['two', tokensTwo]] as const) {
    const sid = decodeJwt(tokens.id_token).sid;
    expect(receiver.hits.filter((hit) => hit.path === `/${name}/backchannel` && decodeJwt(new URLSearchParams(hit.body).get('logout_token')!).sid === sid)).toHaveLength(1);
    const refreshed = await tokenRequest(b, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: (name === 'one' ? one : two).client_id, client_secret: (name === 'one' ? one : two).client_secret });
    expect(refreshed.body.error).toBe('invalid_grant');
  }
  expect([...proxy.served.values()].every((count) => count > 3)).toBe(true); // both instances took part
});

test('a password reset asked through the proxy is completed on whichever instance, and ends the user\'s other sessions', async () => {
  const user = await createUser(a, { email: 'reset-two-instances@example.com' }); // an address of its own: its mail holds one link
  const app = await application('three');
  const elsewhere = new Browser(proxy.origin);
  await signIn(elsewhere, app, user);

  const ask = new Browser(proxy.origin);
  const form = await ask.request('/api/forgot-password.php');
  expect((await ask.request('/api/forgot-password.php', { form: { _csrf: csrfOf(form), email: user.email } })).status).toBe(200);
  const mail = await box.next(user.email);
  const link = new URL(mail.links[0]!);
  expect(link.origin).toBe(proxy.origin);

  const reset = new Browser(proxy.origin);
  const resetPage = await reset.request(`${link.pathname}${link.search}`);
  expect(resetPage.status).toBe(200);
  const token = /name="token" value="([^"]*)"/.exec(resetPage.body)![1]!;
  const done = await reset.request(link.pathname, { form: { _csrf: csrfOf(resetPage), token, new_password: 'a reset password', new_password_again: 'a reset password' } });
  expect(done.status).toBe(200);

  for (let i = 0; i < 2; i += 1) expect((await elsewhere.authorize(app, undefined, { prompt: 'none' })).searchParams.get('error')).toBe('login_required');
  expect((await new Browser(proxy.origin).authorize(app, { ...user, password: 'a reset password' })).searchParams.get('code')).toBeTruthy();
});
