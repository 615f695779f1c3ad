/**
 * `users:*` run as operators run them (`node dist/cli.js`, DATABASE_URL) while the service runs:
 * each change is seen by the service's next request. A disabled user is refused with the
 * wrong-password message on both sign-in pages and gets no code through a login session they
 * already have; disabling or deleting ends their tokens (userinfo 401, introspection inactive)
 * and tells the clients (`token.revoked`, `admin_revoked`); every change is audited as the operator.
 */
import { beforeAll, describe, expect, test } from '@jest/globals';
import { postApplicationsForm } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import type { Step, TestClient, TestUser } from '../helpers/browser.js';
import { auditLines, expectCleanFailure, expectSuccess, runCli, serviceWithCli } from '../helpers/cli.js';
import type { ServiceWithCli } from '../helpers/cli.js';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { basicAuth, createUser, obtainTokens, postForm, registerClient, registerDynamicClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { RECORD_MARGIN_SECONDS } from '../../src/oidc/session-end.js';
import { webhooksApi } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import type { TestApp } from '../helpers/test-app.js';

const service = serviceWithCli({ WEBHOOK_RETRY_BASE_MS: '100' });
let t: TestApp;
let cli: ServiceWithCli['cli'];
let receiver: Receiver;
let client: TestClient;
beforeAll(async () => {
  ({ t, cli, receiver } = service);
  client = await registerClient(t, 'http://localhost:9999/callback', 'Calendar');
  expect((await webhooksApi(t.baseUrl, client, { json: { url: receiver.url(`/${client.client_id}`), events: ['token.revoked'] } })).status).toBe(201);
});

const idOf = async (username: string) => (await t.app.db.prisma.user.findUniqueOrThrow({ where: { username } })).id;
const errorText = (step: Step) => /id="error"[^>]*>([^<]*)</.exec(step.body)?.[1];
const authorizeQuery = (extra: Record<string, string> = {}) => `/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', ...extra })}`;
const introspect = async (token: string) => (await postForm(t, '/api/introspect.php', { token }, { authorization: basicAuth(client) })).body.active;

/** What the login page answers for these credentials: its status and its message. */
async function loginAttempt(user: TestUser) {
  const browser = new Browser(t.baseUrl);
  const page = await browser.follow(authorizeQuery());
  const answer = await browser.submit(page, '/login', { username: user.username, password: user.password });
  return { status: answer.status, error: errorText(answer) };
}

describe('listing and showing', () => {
  test('users:list and users:show, as text and as JSON; users:show lists the applications the user authorized', async () => {
    const user = await createUser(t, { fullName: 'Listed Person' });
    await obtainTokens(t, client, user);
    const id = await idOf(user.username);

    const listed = expectSuccess(await cli(['users:list']));
    expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+${user.username}\\s+user@example.com\\s+Listed Person\\s+\\S+\\s+active$`, 'm'));
    const all = JSON.parse(expectSuccess(await cli(['users:list', '--json'])).stdout) as Record<string, unknown>[];
    expect(all).toContainEqual({ id, username: user.username, email: 'user@example.com', full_name: 'Listed Person', created_at: expect.any(String), disabled_at: null, email_verified: false });

    const shown = JSON.parse(expectSuccess(await cli(['users:show', user.username.toUpperCase(), '--json'])).stdout) as Record<string, unknown>;
    expect(shown).toEqual({
      id, username: user.username, email: 'user@example.com', full_name: 'Listed Person', created_at: expect.any(String), disabled_at: null, email_verified: false,
      applications: [{ client_id: client.client_id, client_name: 'Calendar', scopes: ['openid'], authorized_at: expect.any(String) }],
    });
    const byId = expectSuccess(await cli(['users:show', id]));
    expect(byId.stdout).toMatch(/^username\s+user\w+$/m);
    expect(byId.stdout).toMatch(new RegExp(`^${client.client_id}\\s+Calendar\\s+openid\\s+\\S+$`, 'm'));
  });
});

describe('user:create and the e-mail address', () => {
  const create = (username: string, extra: string[], env: Record<string, string> = {}) => runCli(
    ['user:create', '--username', username, '--email', `${username}@example.com`, '--full-name', 'Mailed Person', '--password-stdin', ...extra],
    { DATABASE_URL: t.env.DATABASE_URL!, DATA_DIR: t.env.DATA_DIR!, ...env }, { input: 'a password of some length' },
  );
  const verificationMails = (username: string) => t.app.db.prisma.mailMessage.count({ where: { kind: 'email_verification', recipient: `${username}@example.com` } });

  test('--email-verified: the operator vouches for the address (email_verified, audited); no mail', async () => {
    const run = expectSuccess(await create('vouched', ['--email-verified'], { SMTP_URL: 'smtp://127.0.0.1:9' }));
    expect(auditLines(run).map((line) => line.event)).toEqual(['user.created', 'user.email_verified']);
    expect((await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: 'vouched' } })).emailVerified).toBe(true);
    expect(await verificationMails('vouched')).toBe(0);
  });

  test('mail on: a verification mail is queued with the user; mail off: none, and the address stays unverified', async () => {
    expectSuccess(await create('mailed', [], { SMTP_URL: 'smtp://127.0.0.1:9' }));
    expect(await verificationMails('mailed')).toBe(1);
    expectSuccess(await create('unmailed', []));
    expect(await verificationMails('unmailed')).toBe(0);
    expect((await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: 'unmailed' } })).emailVerified).toBe(false);
  });
});

describe('users:disable and users:enable', () => {
  test('a disabled user: the wrong-password message on both pages, no code from their session, tokens dead, clients told; enabling lets them in again', async () => {
    const user = await createUser(t);
    const id = await idOf(user.username);
    const browser = new Browser(t.baseUrl);
    expect((await browser.authorize(client, user)).searchParams.get('code')).toBeTruthy(); // a login session and a consent
    const tokens = await obtainTokens(t, client, user);
    const wrongPassword = await loginAttempt({ ...user, password: 'not the password' });
    expect(wrongPassword).toEqual({ status: 401, error: 'Incorrect username or password.' });

    const run = expectSuccess(await cli(['users:disable', user.username]));
    expect(run.stdout).toMatch(new RegExp(`^disabled user ${user.username} \\(${id}\\) and ended their sessions; ended 2 grants \\(Calendar: 2\\)$`, 'm'));

    // At once, on the running service: no login, on either page, with exactly the wrong-password answer
    // (only the audit trail says why).
    expect(await loginAttempt(user)).toEqual(wrongPassword);
    expect(await t.app.db.prisma.auditEvent.findFirst({ where: { userId: id, event: 'login.failed' }, orderBy: { id: 'desc' } }))
      .toMatchObject({ actor: 'anonymous', detail: { page: 'login', reason: 'disabled', username: user.username } });
    const page = await postApplicationsForm(new Browser(t.baseUrl), 'sign_in', { username: user.username, password: user.password });
    expect([page.status, errorText(page)]).toEqual([401, 'Incorrect username or password.']);
    // Their existing login session gets the login page, not a code; prompt=none tells the client login_required.
    const silent = await browser.follow(authorizeQuery());
    expect(silent.status).toBe(200);
    expect(silent.url).toMatch(/\/interaction\//);
    expect(silent.body).toContain('id="username"');
    const none = new URL((await browser.request(authorizeQuery({ prompt: 'none' }))).location!);
    expect(none.searchParams.get('error')).toBe('login_required');
    expect(none.searchParams.get('code')).toBeNull();
    // Their tokens are gone.
    expect((await userinfo(t, `Bearer ${tokens.access_token}`)).status).toBe(401);
    expect(await introspect(tokens.refresh_token)).toBe(false);
    // The client hears of each grant, as an operator's revocation.
    const hit = await receiver.next((h) => h.event.type === 'token.revoked' && h.event.data.username === user.username);
    expect(hit.event.data).toMatchObject({ client_id: client.client_id, reason: 'admin_revoked', token_type: 'grant' });

    // Audited as the operator, in one command (one request id): the revocation, the disabling, the sessions ended.
    const rows = await t.app.db.prisma.auditEvent.findMany({ where: { userId: id, actor: 'operator' }, orderBy: { id: 'asc' } });
    expect(rows.map((row) => row.event)).toEqual(['token.revoked', 'user.disabled', 'user.signed_out', 'session.ended']);
    expect(rows[2]).toMatchObject({ detail: { username: user.username, reason: 'disabled' } });
    expect(new Set(rows.map((row) => row.requestId)).size).toBe(1);
    expect(rows[0]!.requestId).toMatch(/^cli-[0-9a-f-]{36}$/);
    expect(rows[1]).toMatchObject({ address: null, detail: { username: user.username, grants_revoked: 2, os_user: expect.any(String) } });
    expect(rows[0]).toMatchObject({ clientId: client.client_id, detail: { reason: 'admin_revoked', grant_ids: expect.any(Array) } });
    expect(auditLines(run).map((line) => line.event)).toEqual(['token.revoked', 'user.disabled', 'user.signed_out', 'session.ended']);

    // Again: nothing to do, said plainly, nothing written.
    expect(expectSuccess(await cli(['users:disable', id])).stdout).toMatch(/is already disabled \(since \d{4}-/);
    expect(await t.app.db.prisma.auditEvent.count({ where: { userId: id, event: 'user.disabled' } })).toBe(1);

    expect(expectSuccess(await cli(['users:enable', user.username])).stdout).toMatch(`enabled user ${user.username}`);
    expect(expectSuccess(await cli(['users:enable', user.username])).stdout).toMatch('is not disabled');
    expect((await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')).toBeTruthy();
    expect(await t.app.db.prisma.auditEvent.count({ where: { userId: id, event: 'user.enabled', actor: 'operator' } })).toBe(1);
    // The session from before the disabling stays ended: enabling brings no session back.
    expect((await browser.follow(authorizeQuery())).body).toContain('id="username"');
  });
});

describe('users:delete', () => {
  test('ends the tokens, tells the client, deletes the user, keeps their audit rows', async () => {
    const user = await createUser(t);
    const id = await idOf(user.username);
    const tokens = await obtainTokens(t, client, user);
    const run = expectSuccess(await cli(['users:delete', user.username]));
    expect(run.stdout).toMatch(`deleted user ${user.username} (${id}); ended 1 grant (Calendar: 1)`);
    expect((await userinfo(t, `Bearer ${tokens.access_token}`)).status).toBe(401);
    expect(await introspect(tokens.access_token)).toBe(false);
    expect(await t.app.db.prisma.user.findUnique({ where: { id } })).toBeNull();
    // The client's token.revoked was written to the outbox by the command, one for the grant, and
    // is delivered as an operator's revocation, though the user is gone.
    const outbox = await t.app.db.prisma.webhookDelivery.findMany({ where: { eventType: 'token.revoked', endpoint: { clientId: client.client_id } } });
    const mine = outbox.filter((row) => (row.payload as { data: { username?: string } }).data.username === user.username);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.payload).toMatchObject({ type: 'token.revoked', data: { client_id: client.client_id, reason: 'admin_revoked', token_type: 'grant' } });
    const hit = await receiver.next((h) => h.event.type === 'token.revoked' && h.event.data.username === user.username);
    expect(hit.event.data).toMatchObject({ client_id: client.client_id, reason: 'admin_revoked', token_type: 'grant' });
    const events = (await t.app.db.prisma.auditEvent.findMany({ where: { userId: id }, orderBy: { id: 'asc' } })).map((row) => row.event);
    expect(events).toEqual(['login.succeeded', 'consent.granted', 'token.issued', 'token.revoked', 'user.deleted']);
    expectCleanFailure(await cli(['users:show', id]), `no user "${id}"`, 1);
  });
});

describe('users:set-password', () => {
  test('from stdin (one trailing newline dropped) or --password; the old password stops working', async () => {
    const user = await createUser(t);
    const id = await idOf(user.username);
    expectSuccess(await cli(['users:set-password', user.username, '--password-stdin'], 'new password from stdin\n'));
    expect((await loginAttempt(user)).status).toBe(401);
    expect((await new Browser(t.baseUrl).authorize(client, { ...user, password: 'new password from stdin' })).searchParams.get('code')).toBeTruthy();
    expectSuccess(await cli(['users:set-password', id, '--password', 'another new password']));
    expect((await new Browser(t.baseUrl).authorize(client, { ...user, password: 'another new password' })).searchParams.get('code')).toBeTruthy();
    const rows = await t.app.db.prisma.auditEvent.findMany({ where: { userId: id, event: 'user.password_set' } });
    expect(rows).toHaveLength(2);
    expect(await t.app.db.prisma.auditEvent.count({ where: { userId: id, event: 'user.signed_out', detail: { path: ['reason'], equals: 'password_set' } } })).toBe(2);
    expect(JSON.stringify(rows.map((row) => row.detail))).not.toMatch(/password from stdin|another new password/);
  });

  test.each<[string, string[], string | undefined, string | RegExp, number]>([
    ['no password at all', ['users:set-password', 'USER'], undefined, 'missing --password-stdin', 2],
    ['both ways at once', ['users:set-password', 'USER', '--password-stdin', '--password', 'x'.repeat(12)], 'y'.repeat(12), 'not both', 2],
    ['an empty stdin', ['users:set-password', 'USER', '--password-stdin'], '', 'nothing was read from stdin', 2],
    ['a short password', ['users:set-password', 'USER', '--password-stdin'], 'short\n', /password must be \d+ to \d+ characters/, 1],
  ])('%s: refused with a clear message, the password unchanged', async (_, args, input, message, code) => {
    const user = await createUser(t);
    expectCleanFailure(await cli(args.map((arg) => (arg === 'USER' ? user.username : arg)), input), message, code);
    expect((await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')).toBeTruthy();
  });
});

describe('ending a user\'s sessions', () => {
  /** A browser signed in as `user` both ways: a login session (it has authorized the client) and the applications page's own sign-in. */
  async function signedInBrowsers(user: TestUser) {
    const flow = new Browser(t.baseUrl);
    expect((await flow.authorize(client, user)).searchParams.get('code')).toBeTruthy();
    expect((await flow.authorize(client, user)).searchParams.get('code')).toBeTruthy(); // silently, from the session
    const page = new Browser(t.baseUrl);
    expect((await postApplicationsForm(page, 'sign_in', { username: user.username, password: user.password })).status).toBe(303);
    expect((await page.request('/api/applications.php')).body).toContain('Your account');
    return { flow, page };
  }

  /** What each browser sees now: the login page (or a code) and the applications page (or its sign-in form). */
  async function seen({ flow, page }: { flow: Browser; page: Browser }) {
    const authorize = await flow.follow(authorizeQuery());
    const none = new URL((await flow.request(authorizeQuery({ prompt: 'none' }))).location!);
    return {
      authorize: authorize.body.includes('id="username"') ? 'login page' : authorize.location ? 'code' : authorize.status,
      promptNone: none.searchParams.get('error') ?? 'code',
      flowApplications: (await flow.request('/api/applications.php')).body.includes('Your account') ? 'signed in' : 'sign-in form',
      pageApplications: (await page.request('/api/applications.php')).body.includes('Your account') ? 'signed in' : 'sign-in form',
    };
  }
  const ENDED = { authorize: 'login page', promptNone: 'login_required', flowApplications: 'sign-in form', pageApplications: 'sign-in form' };

  test('users:sign-out ends every session of the user on the running service (login sessions and the applications page\'s sign-in), and the tokens those sessions got without offline_access; a new sign-in works', async () => {
    const user = await createUser(t);
    const other = await createUser(t);
    const id = await idOf(user.username);
    const browsers = await signedInBrowsers(user);
    const others = await signedInBrowsers(other);
    const tokens = await obtainTokens(t, client, user);

    const run = expectSuccess(await cli(['users:sign-out', user.username]));
    expect(run.stdout).toBe(`ended every session of ${user.username} (${id}): every browser signed in as them must sign in again\n`);
    expect(await seen(browsers)).toEqual(ENDED);
    expect(await seen(others)).toEqual({ authorize: 'code', promptNone: 'code', flowApplications: 'signed in', pageApplications: 'signed in' });
    expect((await userinfo(t, `Bearer ${tokens.access_token}`)).status).toBe(401); // no offline_access: ended with the session

    const rows = await t.app.db.prisma.auditEvent.findMany({ where: { userId: id, event: 'user.signed_out' } });
    expect(rows).toEqual([expect.objectContaining({ actor: 'operator', detail: { username: user.username, reason: 'sign_out', os_user: expect.any(String) } })]);
    expect(auditLines(run).map((line) => line.event)).toEqual(['user.signed_out', 'token.revoked', 'session.ended']);

    expect(await seen(await signedInBrowsers(user))).toEqual({ authorize: 'code', promptNone: 'code', flowApplications: 'signed in', pageApplications: 'signed in' });
  });

  test('a sign-in at once after the end, in the very second of it, is not ended with the sessions before', async () => {
    const user = await createUser(t);
    for (let round = 0; round < 3; round += 1) {
      expectSuccess(await cli(['users:sign-out', user.username]));
      expect(await seen(await signedInBrowsers(user))).toEqual({ authorize: 'code', promptNone: 'code', flowApplications: 'signed in', pageApplications: 'signed in' });
    }
  });

  test('users:sign-out tells every application of the user\'s sessions (back-channel logout, sent by the running service); offline_access grants stay', async () => {
    const user = await createUser(t);
    const id = await idOf(user.username);
    const registered = await registerDynamicClient(t, {
      client_name: 'Logs Out', redirect_uris: ['http://localhost:9999/lo/callback'], grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_post', backchannel_logout_uri: receiver.url('/backchannel/lo'),
    });
    const lo = { client_id: registered.client_id, client_secret: registered.client_secret!, redirect_uri: 'http://localhost:9999/lo/callback' };
    const exchange = async (url: URL) => (await tokenRequest(t, { grant_type: 'authorization_code', code: url.searchParams.get('code')!, redirect_uri: lo.redirect_uri, client_id: lo.client_id, client_secret: lo.client_secret })).body as Record<string, string>;
    const online = await exchange(await new Browser(t.baseUrl).authorize(lo, user));
    const offline = await exchange(await new Browser(t.baseUrl).authorize(lo, user, { scope: 'openid offline_access', prompt: 'consent' }));
    // A third session that has run out on its own: its record outlives it by a day (RECORD_MARGIN_SECONDS), and it is told nothing.
    const expired = String(decodeJwt((await exchange(await new Browser(t.baseUrl).authorize(lo, user))).id_token!).sid);
    const { prisma } = t.app.db;
    expect(await prisma.$executeRaw`UPDATE oidc_models SET expires_at = now() + make_interval(secs => ${RECORD_MARGIN_SECONDS - 3600}) WHERE type = 'SessionClient' AND payload->>'sid' = ${expired}`).toBe(1);

    const run = expectSuccess(await cli(['users:sign-out', user.username]));
    // The logouts are queued in the sign-out's own transaction: the two live sessions', not the ended one's.
    expect((await prisma.backchannelLogout.findMany({ where: { accountId: id }, select: { sid: true } })).map((row) => row.sid).sort())
      .toEqual([online, offline].map((tokens) => String(decodeJwt(tokens.id_token!).sid)).sort());
    expect(await prisma.oidcModel.count({ where: { type: 'SessionClient', payload: { path: ['sid'], equals: expired } } })).toBe(0);
    expect(auditLines(run).map((line) => line.event)).toEqual(['user.signed_out', 'token.revoked', 'session.ended']);
    const jwks = createRemoteJWKSet(new URL(`${t.baseUrl}/api/jwks.php`));
    for (const tokens of [online, offline]) {
      const sid = decodeJwt(tokens.id_token!).sid;
      const hit = await receiver.next((h) => h.path === '/backchannel/lo' && decodeJwt(new URLSearchParams(h.body).get('logout_token')!).sid === sid);
      const { payload } = await jwtVerify(new URLSearchParams(hit.body).get('logout_token')!, jwks, { issuer: t.baseUrl, audience: lo.client_id });
      expect(payload.sub).toBe(id);
    }
    expect((await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: online.refresh_token!, client_id: lo.client_id, client_secret: lo.client_secret })).body.error).toBe('invalid_grant');
    expect((await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: offline.refresh_token!, client_id: lo.client_id, client_secret: lo.client_secret })).status).toBe(200);
  });

  test('users:set-password ends them too: a session taken before (a stolen cookie) is over', async () => {
    const user = await createUser(t);
    const browsers = await signedInBrowsers(user);
    expectSuccess(await cli(['users:set-password', user.username, '--password-stdin'], 'a brand new password\n'));
    expect(await seen(browsers)).toEqual(ENDED);
  });

  test('an unknown user: a clean failure, exit 1', async () => {
    expectCleanFailure(await cli(['users:sign-out', 'nobody-at-all']), 'no user "nobody-at-all"', 1);
  });
});

describe('a row another session holds', () => {
  test('a statement that outwaits DATABASE_STATEMENT_TIMEOUT_MS is one line, exit 1, and changes nothing', async () => {
    const user = await createUser(t);
    const id = await idOf(user.username);
    let release!: () => void;
    const released = new Promise<void>((resolve) => { release = resolve; });
    let locked!: () => void;
    const holding = new Promise<void>((resolve) => { locked = resolve; });
    const holder = t.app.db.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1 FROM users WHERE id = ${id}::uuid FOR UPDATE`;
      locked();
      await released;
    }, { timeout: 30_000 });
    try {
      await holding;
      const run = await runCli(['users:disable', user.username], { DATABASE_URL: t.env.DATABASE_URL!, DATA_DIR: t.env.DATA_DIR!, DATABASE_STATEMENT_TIMEOUT_MS: '300' });
      expectCleanFailure(run, /users:disable: the database did not answer \(.*statement timeout.*DATABASE_STATEMENT_TIMEOUT_MS is 300 ms\)/, 1);
    } finally {
      release();
      await holder;
    }
    expect((await t.app.db.prisma.user.findUniqueOrThrow({ where: { id } })).disabledAt).toBeNull();
  });
});

describe('bad input', () => {
  test.each<[string, string[], string | RegExp, number]>([
    ['an unknown user', ['users:disable', 'nobody-here'], 'no user "nobody-here" (name a user by id or username)', 1],
    ['an unknown id', ['users:delete', '00000000-0000-4000-8000-000000000000'], 'no user "00000000-0000-4000-8000-000000000000"', 1],
    ['a missing user', ['users:disable'], /missing <user>\nusage: node dist\/cli\.js users:disable <user>/, 2],
    ['an extra argument', ['users:enable', 'alice', 'bob'], 'unexpected argument "bob"', 2],
    ['an unknown option', ['users:list', '--all'], /Unknown option '--all'/, 2],
    ['an unknown command', ['users:purge'], /unknown command "users:purge"\nusage: /, 2],
  ])('%s: a clear message, the exit code, no stack', async (_, args, message, code) => {
    expectCleanFailure(await cli(args), message, code);
  });
});
