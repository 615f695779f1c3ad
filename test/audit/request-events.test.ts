/**
 * The audit trail of what requests do: every event a page or an endpoint writes, with its
 * actor, user, client, the request's address and its id (the same id as the request's access
 * line, so an audit row leads to the request's logs).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { AuditEvent } from '../../src/generated/prisma/client.js';
import { createLogger } from '../../src/ops/logger.js';
import { postApplicationsForm, signInOnApplicationsPage } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import type { TestClient } from '../helpers/browser.js';
import { basicAuth, createUser, obtainTokens, postForm, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { webhooksApi } from '../helpers/receiver.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

type Line = Record<string, unknown>;

let t: TestApp;
const lines: Line[] = [];
beforeAll(async () => {
  const logger = createLogger({ level: 'info', destination: { write: (line: string) => { lines.push(JSON.parse(line) as Line); } } });
  t = await startTestApp({ logger, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
});
afterAll(async () => { await t?.close(); });

const idOf = async (username: string) => (await t.app.db.prisma.user.findUniqueOrThrow({ where: { username } })).id;

/** The rows of `event` written after row `after` (an id), oldest first. */
async function written(event: string, after = 0n): Promise<AuditEvent[]> {
  return t.app.db.prisma.auditEvent.findMany({ where: { event, id: { gt: after } }, orderBy: { id: 'asc' } });
}

const lastId = async () => (await t.app.db.prisma.auditEvent.findFirst({ orderBy: { id: 'desc' } }))?.id ?? 0n;

/** The row came from a request on 127.0.0.1 whose access line (same request id) has this route; its audit line says the same. */
function expectFromRequest(row: AuditEvent, route: string) {
  expect(row.address).toBe('127.0.0.1');
  expect(lines).toContainEqual(expect.objectContaining({ msg: 'request', request_id: row.requestId, route }));
  expect(lines).toContainEqual(expect.objectContaining({
    msg: 'audit', event: row.event, actor: row.actor, user_id: row.userId, client_id: row.clientId, request_id: row.requestId, detail: row.detail,
  }));
}

describe('clients', () => {
  test('client.registered: anonymous, with the caller\'s X-Request-Id', async () => {
    const res = await fetch(`${t.baseUrl}/api/register.php`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'register-audit-1' },
      body: JSON.stringify({ client_name: 'Audited', redirect_uri: 'http://localhost:9999/callback' }),
    });
    const { client_id: clientId } = await res.json() as { client_id: string };
    const [row] = await t.app.db.prisma.auditEvent.findMany({ where: { event: 'client.registered', clientId } });
    expect(row).toMatchObject({
      actor: 'anonymous', userId: null, requestId: 'register-audit-1', detail: { client_name: 'Audited', redirect_uri: 'http://localhost:9999/callback' },
    });
    expectFromRequest(row!, '/api/register.php');
  });

  test('webhook.endpoint_added and webhook.endpoint_removed: the client, with the URL\'s origin only', async () => {
    const client = await registerClient(t);
    const url = 'http://127.0.0.1:9/hooks/T0123/capability-in-the-path?token=abc';
    const added = await webhooksApi(t.baseUrl, client, { json: { url, events: ['token.revoked'] } });
    expect(added.status).toBe(201);
    const removed = await webhooksApi(t.baseUrl, client, { method: 'DELETE', query: { id: String(added.body.id) } });
    expect(removed.status).toBe(204);
    const rows = await t.app.db.prisma.auditEvent.findMany({ where: { clientId: client.client_id, event: { startsWith: 'webhook.' } }, orderBy: { id: 'asc' } });
    expect(rows.map((row) => [row.event, row.actor, row.detail])).toEqual([
      ['webhook.endpoint_added', `client:${client.client_id}`, { webhook_id: added.body.id, url_origin: 'http://127.0.0.1:9', events: ['token.revoked'] }],
      ['webhook.endpoint_removed', `client:${client.client_id}`, { webhook_id: added.body.id }],
    ]);
    for (const row of rows) expectFromRequest(row, '/api/webhooks.php');
  });
});

describe('the login page', () => {
  let client: TestClient;
  beforeAll(async () => { client = await registerClient(t); });

  test('login.failed names an existing user (reason wrong_password), never a name that names nobody; login.succeeded is the user', async () => {
    const user = await createUser(t);
    const userId = await idOf(user.username);
    const after = await lastId();
    const browser = new Browser(t.baseUrl);
    const page = await browser.follow(`/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`);
    const wrong = await browser.submit(page, '/login', { username: user.username, password: 'not the password' });
    const unknown = await browser.submit(wrong, '/login', { username: 'typed-a-secret-here', password: user.password });
    await browser.submit(unknown, '/login', { username: user.username.toUpperCase(), password: user.password });

    const failed = await written('login.failed', after);
    expect(failed.map((row) => [row.actor, row.userId, row.clientId, row.detail])).toEqual([
      ['anonymous', userId, client.client_id, { page: 'login', username: user.username, reason: 'wrong_password' }],
      ['anonymous', null, client.client_id, { page: 'login', reason: 'unknown_user' }],
    ]);
    const [succeeded] = await written('login.succeeded', after);
    expect(succeeded).toMatchObject({ actor: `user:${userId}`, userId, clientId: client.client_id, detail: { page: 'login', username: user.username } });
    for (const row of [...failed, succeeded!]) expectFromRequest(row, '/interaction/:uid/login');
  });

  test('consent.granted on Allow (the scopes granted), consent.denied on Deny and on Cancel at the login page', async () => {
    const user = await createUser(t);
    const userId = await idOf(user.username);
    const after = await lastId();
    await new Browser(t.baseUrl).authorize(client, user, {}, 'approve');
    await new Browser(t.baseUrl).authorize(client, await createUser(t), {}, 'deny');
    const cancelled = new Browser(t.baseUrl);
    const page = await cancelled.follow(`/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`);
    await cancelled.submit(page, '/abort');

    const [granted] = await written('consent.granted', after);
    expect(granted).toMatchObject({ actor: `user:${userId}`, userId, clientId: client.client_id, detail: { scope: 'openid' } });
    expectFromRequest(granted!, '/interaction/:uid/confirm');
    const denied = await written('consent.denied', after);
    expect(denied.map((row) => [row.actor.replace(/[\w-]{36}$/, '<id>'), row.clientId, row.detail])).toEqual([
      ['user:<id>', client.client_id, { prompt: 'consent' }],
      ['anonymous', client.client_id, { prompt: 'login' }],
    ]);
    for (const row of denied) expectFromRequest(row, '/interaction/:uid/abort');
  });

  test('login.blocked once the guard holds the username and address: the user, and when to retry', async () => {
    const user = await createUser(t);
    const after = await lastId();
    const browser = new Browser(t.baseUrl);
    let page = await browser.follow(`/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`);
    // As fast as they go until one is refused unchecked (the 9th must wait 15 s: accounts/login-guard.ts).
    let attempts = 0;
    while (attempts < 9 && !/id="error"[^>]*>Too many/.test(page.body)) {
      attempts += 1;
      page = await browser.submit(page, '/login', { username: user.username, password: `wrong ${attempts}` });
    }
    expect(page.status).toBe(429);
    expect(await written('login.failed', after)).toHaveLength(attempts - 1);
    const [blocked] = await written('login.blocked', after);
    expect(blocked).toMatchObject({ actor: 'anonymous', userId: await idOf(user.username), detail: { page: 'login', username: user.username, retry_after: expect.any(Number) } });
    expectFromRequest(blocked!, '/interaction/:uid/login');
  });
});

describe('the applications page', () => {
  test('sign-in (login.succeeded / login.failed, page "applications") and revoking an application (token.revoked, user_revoked)', async () => {
    const client = await registerClient(t, 'http://localhost:9999/callback', 'Revocable');
    const user = await createUser(t);
    const userId = await idOf(user.username);
    await obtainTokens(t, client, user);
    const after = await lastId();
    const browser = new Browser(t.baseUrl);
    expect((await postApplicationsForm(browser, 'sign_in', { username: user.username, password: 'wrong password' })).status).toBe(401);
    await signInOnApplicationsPage(browser, user);
    expect((await postApplicationsForm(browser, 'revoke', { client_id: client.client_id })).status).toBe(303);

    const [failed] = await written('login.failed', after);
    expect(failed).toMatchObject({ actor: 'anonymous', userId, clientId: null, detail: { page: 'applications', reason: 'wrong_password' } });
    const [succeeded] = await written('login.succeeded', after);
    expect(succeeded).toMatchObject({ actor: `user:${userId}`, userId, clientId: null, detail: { page: 'applications' } });
    const revoked = await written('token.revoked', after);
    expect(revoked).toEqual([expect.objectContaining({
      actor: `user:${userId}`, userId, clientId: client.client_id,
      detail: { reason: 'user_revoked', token_type: 'grant', grant_ids: [expect.any(String)], username: user.username },
    })]);
    for (const row of [failed!, succeeded!, ...revoked]) expectFromRequest(row, '/api/applications.php');
  });
});

describe('the token and revocation endpoints', () => {
  let client: TestClient;
  beforeAll(async () => { client = await registerClient(t); });
  const refresh = (refreshToken: string) => tokenRequest(t, {
    grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, client_secret: client.client_secret,
  });

  test('token.issued and token.refreshed: by the client, for the user, written with the tokens; none for a refused redemption', async () => {
    const user = await createUser(t);
    const userId = await idOf(user.username);
    const code = (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!;
    const after = await lastId();
    const form = { code, client_id: client.client_id, client_secret: client.client_secret };
    const issued = await tokenRequest(t, form);
    expect(issued.status).toBe(200);
    expect((await refresh(String(issued.body.refresh_token))).status).toBe(200);
    expect((await tokenRequest(t, form)).status).toBe(400); // the code again: refused, no token, no row

    const rows = [...await written('token.issued', after), ...await written('token.refreshed', after)];
    expect(rows.map((row) => [row.event, row.actor, row.userId, row.clientId, row.detail])).toEqual([
      ['token.issued', `client:${client.client_id}`, userId, client.client_id, { grant_type: 'authorization_code', grant_id: expect.any(String), scope: 'openid' }],
      ['token.refreshed', `client:${client.client_id}`, userId, client.client_id, { grant_id: expect.any(String), scope: 'openid' }],
    ]);
    expect((rows[0]!.detail as { grant_id: string }).grant_id).toBe((rows[1]!.detail as { grant_id: string }).grant_id); // one grant
    for (const row of rows) expectFromRequest(row, '/api/token.php');
  });

  test('RFC 7009 revocation: token.revoked by the client (revocation_request, the token type)', async () => {
    const user = await createUser(t);
    const tokens = await obtainTokens(t, client, user);
    const after = await lastId();
    expect((await postForm(t, '/api/revoke.php', { token: tokens.refresh_token }, { authorization: basicAuth(client) })).status).toBe(200);
    const [row] = await written('token.revoked', after);
    expect(row).toMatchObject({
      actor: `client:${client.client_id}`, userId: await idOf(user.username), clientId: client.client_id,
      detail: { reason: 'revocation_request', token_type: 'refresh_token', grant_id: expect.any(String) },
    });
    expectFromRequest(row!, '/api/revoke.php');
  });

  test('token.reuse_detected: a used refresh token presented again, and a code redeemed twice', async () => {
    const user = await createUser(t);
    const userId = await idOf(user.username);
    const tokens = await obtainTokens(t, client, user);
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
    const after = await lastId();
    expect((await refresh(tokens.refresh_token)).status).toBe(400);

    const code = (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!;
    const form = { code, client_id: client.client_id, client_secret: client.client_secret };
    expect((await tokenRequest(t, form)).status).toBe(200);
    expect((await tokenRequest(t, form)).status).toBe(400);

    const rows = await written('token.reuse_detected', after);
    expect(rows.map((row) => [row.actor, row.userId, row.clientId, row.detail])).toEqual([
      [`client:${client.client_id}`, userId, client.client_id, { reason: 'refresh_token_reuse', token_type: 'grant', grant_id: expect.any(String) }],
      // As with the webhook: the replayed code is deleted with its grant before the provider reports it, so no user.
      [`client:${client.client_id}`, null, client.client_id, { reason: 'code_replay', token_type: 'grant', grant_id: expect.any(String) }],
    ]);
    for (const row of rows) expectFromRequest(row, '/api/token.php');
  });
});
