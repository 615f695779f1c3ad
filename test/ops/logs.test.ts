/**
 * Structured logs: whole flows run with the app's logger
 * writing into a captured stream (the authorization flow, the token endpoint, the applications
 * page's sign-in, the settings page's sign-in and secret rotation, the webhooks API); no secret
 * of those flows appears in any line, every line is JSON, and one request can be followed by its
 * X-Request-Id.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createLogger } from '../../src/ops/logger.js';
import { routeProcessOutput } from '../../src/ops/process-output.js';
import { signInOnApplicationsPage } from '../helpers/applications-page.js';
import { Browser, obtainCode } from '../helpers/browser.js';
import { basicAuth, createUser, postForm, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { webhooksApi } from '../helpers/receiver.js';
import { pageText, postSettingsForm, signInOnSettingsPage } from '../helpers/settings-page.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

type Line = Record<string, unknown>;

function capture() {
  const chunks: string[] = [];
  return {
    destination: { write: (chunk: string) => { chunks.push(chunk); } },
    text: () => chunks.join(''),
    lines: (): Line[] => chunks.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Line),
  };
}

describe('logs of whole flows', () => {
  const out = capture();
  let t: TestApp;
  let clientId: string;
  const secrets: Record<string, string> = {};
  /** The values of the cookies a browser was sent, as secrets (the short ones are flags, not sessions). */
  const cookiesOf = (name: string, browser: Browser) => {
    for (const [index, line] of browser.setCookies.entries()) {
      const value = line.split(';')[0]!.split('=').slice(1).join('=');
      if (value.length >= 8) secrets[`${name} cookie ${index}`] = value;
    }
  };
  beforeAll(async () => {
    t = await startTestApp({ logger: createLogger({ level: 'trace', destination: out.destination }), env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });

    const user = await createUser(t, { password: 'pw-that-must-not-be-logged-7Q' });
    secrets.password = user.password;
    const client = await registerClient(t);
    clientId = client.client_id;
    secrets.client_secret = client.client_secret;
    const browser = new Browser(t.baseUrl);
    const redirect = await browser.authorize(client, user, { state: 'st4te' });
    const code = redirect.searchParams.get('code')!;
    secrets.code = code;
    cookiesOf('login', browser);

    const basic = basicAuth(client);
    secrets.authorization = basic.slice('Basic '.length);
    const token = await tokenRequest(t, { grant_type: 'authorization_code', code, redirect_uri: client.redirect_uri }, { authorization: basic });
    expect(token.status).toBe(200);
    secrets.access_token = String(token.body.access_token);
    secrets.refresh_token = String(token.body.refresh_token);
    expect((await userinfo(t, `Bearer ${secrets.access_token}`)).status).toBe(200);
    await fetch(`${t.baseUrl}/api/userinfo.php?access_token=${secrets.access_token}`); // a token in a query string

    const refreshed = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: secrets.refresh_token, client_id: client.client_id, client_secret: client.client_secret });
    expect(refreshed.status).toBe(200);
    secrets.refreshed_access_token = String(refreshed.body.access_token);
    secrets.refreshed_refresh_token = String(refreshed.body.refresh_token);
    const revoked = await postForm(t, '/api/revoke.php', { token: secrets.refreshed_refresh_token }, { authorization: basic });
    expect(revoked.status).toBe(200);
    // A code replayed: refused (and the grant revoked), and still not logged.
    expect((await tokenRequest(t, { grant_type: 'authorization_code', code, redirect_uri: client.redirect_uri }, { authorization: basic })).status).toBe(400);
    // A wrong password at the login form.
    await new Browser(t.baseUrl).authorize(client, { ...user, password: 'wrong-pw-also-secret-9Z' }).catch(() => undefined);
    secrets.wrong_password = 'wrong-pw-also-secret-9Z';
    // A token request naming the client with a wrong secret: refused, its client still named in the log.
    secrets.wrong_client_secret = 'wrong-client-secret-never-logged-4K';
    expect((await tokenRequest(t, { code: 'no-such-code', client_id: client.client_id, client_secret: secrets.wrong_client_secret })).status).toBe(401);

    // The applications page: signed in with the password; its session cookie.
    const apps = new Browser(t.baseUrl);
    await signInOnApplicationsPage(apps, user);
    cookiesOf('applications page', apps);
    expect(Object.keys(secrets).some((name) => name.startsWith('applications page cookie'))).toBe(true);

    // The settings page: signed in with the client's secret, which it then rotates (shown once).
    const settings = new Browser(t.baseUrl);
    const page = await signInOnSettingsPage(settings, client);
    expect(page.status).toBe(200);
    secrets.rotated_client_secret = pageText(await postSettingsForm(settings, page, 'rotate_secret'), 'new_client_secret')!;
    cookiesOf('settings page', settings);
    expect(Object.keys(secrets).some((name) => name.startsWith('settings page cookie'))).toBe(true);

    // The webhooks API: the endpoint's signing secret is in its 201 response only.
    const rotated = { ...client, client_secret: secrets.rotated_client_secret };
    secrets.rotated_authorization = basicAuth(rotated).slice('Basic '.length);
    const hook = await webhooksApi(t.baseUrl, rotated, { json: { url: 'http://127.0.0.1:9/logs', events: ['token.issued'] } });
    expect(hook.status).toBe(201);
    secrets.webhook_secret = String(hook.body.secret);
    expect(secrets.webhook_secret).toMatch(/^whsec_/);
  }, 60_000);
  afterAll(async () => { await t?.close(); });

  test('every line is one JSON object with a level and a time', () => {
    const lines = out.lines();
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) {
      expect(typeof line.level).toBe('number');
      expect(typeof line.time).toBe('string');
    }
  });

  test('no secret of the flows appears in any line', () => {
    const text = out.text();
    for (const [name, secret] of Object.entries(secrets)) {
      expect(secret.length).toBeGreaterThanOrEqual(8);
      if (text.includes(secret)) throw new Error(`the logs contain the ${name}`);
    }
    expect(text).not.toMatch(/interaction\/[\w-]{10,}/); // interaction uids are session handles
  });

  test('one access line a request: method, route without query, status, duration, id, address, client_id', () => {
    const access = out.lines().filter((line) => line.msg === 'request');
    const exchange = access.find((line) => line.route === '/api/token.php' && line.status === 200);
    expect(exchange).toMatchObject({ method: 'POST', client_address: '127.0.0.1' });
    expect(typeof exchange!.duration_ms).toBe('number');
    expect(typeof exchange!.request_id).toBe('string');
    expect(typeof exchange!.client_id).toBe('string');
    expect(access.some((line) => line.route === '/interaction/:uid/login')).toBe(true);
    expect(access.find((line) => line.route === '/api/authorize.php')).toMatchObject({ method: 'GET', status: 303 });
    for (const route of ['/api/applications.php', '/api/settings.php', '/api/webhooks.php']) expect(access.some((line) => line.route === route)).toBe(true);
    for (const line of access) expect(String(line.route)).not.toContain('?');
  });

  test('client_id on every access line of a request about a known client, and on none other', () => {
    const access = out.lines().filter((line) => line.msg === 'request');
    const about = (route: string, status?: number) => access.filter((line) => line.route === route && (status === undefined || line.status === status));
    const cases: [string, number | undefined][] = [
      ['/api/register.php', 201], // the client it registered
      ['/api/authorize.php', 303], ['/interaction/:uid', 200], ['/interaction/:uid/login', undefined], ['/interaction/:uid/confirm', 303],
      ['/api/token.php', 200], ['/api/token.php', 401], // authenticated, or named by a request whose secret was wrong
      ['/api/userinfo.php', 200], ['/api/revoke.php', 200], ['/api/settings.php', 303], ['/api/webhooks.php', 201],
    ];
    for (const [route, status] of cases) {
      const lines = about(route, status);
      expect({ route, status, lines: lines.length > 0 }).toEqual({ route, status, lines: true });
      for (const line of lines) expect({ route, status, client_id: line.client_id }).toEqual({ route, status, client_id: clientId });
    }
    // The settings page: its sign-in form is about no client yet, the page signed in is.
    expect(about('/api/settings.php', 200).map((line) => line.client_id)).toEqual(expect.arrayContaining([undefined, clientId]));
    // Requests about no client: the applications page's sign-in (a user's), discovery, the settings sign-in form.
    for (const line of [...about('/api/applications.php'), ...about('/.well-known/openid-configuration'), ...about('/api/settings.php', 401)]) {
      expect(line.client_id).toBeUndefined();
    }
  });

  test('a request is followed by the X-Request-Id it sent; an unsafe id is replaced', async () => {
    const res = await fetch(`${t.baseUrl}/api/userinfo.php`, { headers: { 'x-request-id': 'trace-me-42', authorization: 'Bearer not-a-token' } });
    expect(res.headers.get('x-request-id')).toBe('trace-me-42');
    const mine = out.lines().filter((line) => line.request_id === 'trace-me-42');
    expect(mine).toEqual([expect.objectContaining({ msg: 'request', route: '/api/userinfo.php', status: 401 })]);

    for (const unsafe of ['x'.repeat(129), 'has space', 'naïve']) {
      const other = await fetch(`${t.baseUrl}/healthz/live`, { headers: { 'x-request-id': unsafe } });
      expect(other.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});

describe("a provider event's failed work", () => {
  test("is logged with its request's id and method, as the request's own errors are", async () => {
    const out = capture();
    const t = await startTestApp({ logger: createLogger({ level: 'info', destination: out.destination }) });
    try {
      const user = await createUser(t);
      const client = await registerClient(t);
      const form = { code: await obtainCode(t.baseUrl, client, user), client_id: client.client_id, client_secret: client.client_secret };
      expect((await tokenRequest(t, form)).status).toBe(200);
      // With the audit table gone, the replay's token.reuse_detected row (written after the
      // provider revoked the grant, oidc/provider-events.ts) fails; the answer stands.
      await t.app.db.prisma.$executeRawUnsafe('ALTER TABLE audit_events RENAME TO audit_events_away');
      try {
        expect((await tokenRequest(t, form, { 'x-request-id': 'replayed-code-1' })).status).toBe(400);
      } finally {
        await t.app.db.prisma.$executeRawUnsafe('ALTER TABLE audit_events_away RENAME TO audit_events');
      }
      const failed = out.lines().filter((line) => line.request_id === 'replayed-code-1' && line.level === 50);
      expect(failed).toEqual([expect.objectContaining({ msg: 'request failed', method: 'POST', err: expect.objectContaining({ message: expect.stringContaining('audit_events') }) })]);
    } finally {
      await t.close();
    }
  });
});

describe('process output', () => {
  test("the provider's console warnings and Node's process warnings become log lines", async () => {
    const out = capture();
    const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error };
    const listeners = process.listeners('warning');
    try {
      routeProcessOutput(createLogger({ level: 'info', destination: out.destination }));
      console.warn('oidc-provider WARNING: already parsed request body detected');
      // What process.emitWarning emits (jest's sandboxed `process` does not relay the real one).
      const warning = Object.assign(new Error('something deprecated'), { name: 'DeprecationWarning' });
      process.emit('warning', warning);
    } finally {
      Object.assign(console, saved);
      process.removeAllListeners('warning');
      for (const listener of listeners) process.on('warning', listener);
    }
    expect(out.lines()).toEqual([
      expect.objectContaining({ level: 40, source: 'oidc-provider', msg: 'already parsed request body detected' }),
      expect.objectContaining({ level: 40, source: 'node', msg: 'something deprecated' }),
    ]);
  });
});
