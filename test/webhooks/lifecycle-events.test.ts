/**
 * The token-lifecycle events through the whole app: `authorization.granted` at every approval
 * (also the silent one of a user who already consented), `token.refreshed` at each refresh, and
 * `token.revoked` at an RFC 7009 revocation (access or refresh token), at refresh-token reuse
 * and when a user revokes the application on /api/applications.php. Each arrives signed, names
 * the client and the user, and carries no token.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import type { Step, TestClient, TestUser } from '../helpers/browser.js';
import { basicAuth, createUser, obtainTokens, postForm, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { startReceiver, verify, webhooksApi } from '../helpers/receiver.js';
import type { Hit, Receiver } from '../helpers/receiver.js';
import { startTestApp } from '../helpers/test-app.js';
import type { Mode, TestApp } from '../helpers/test-app.js';

const EVENTS = ['authorization.granted', 'token.issued', 'token.refreshed', 'token.revoked'];

describe.each<Mode>(['postgres', 'embedded'])('token lifecycle events (%s)', (mode) => {
  let t: TestApp;
  let receiver: Receiver;
  let client: TestClient;
  let user: TestUser;
  let secret: string;
  let path: string;
  let seen: number;

  beforeAll(async () => {
    t = await startTestApp({ mode, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  /** A fresh client subscribed to the token events, and a user. */
  async function subscribed() {
    client = await registerClient(t);
    user = await createUser(t);
    path = `/${client.client_id}`;
    seen = receiver.hits.length;
    const res = await webhooksApi(t.baseUrl, client, { json: { url: receiver.url(path), events: EVENTS } });
    expect(res.status).toBe(201);
    secret = String(res.body.secret);
  }

  /** The next event of `type` to this test's endpoint, verified, checked to hold no token. */
  async function nextEvent(type: string, tokens: string[]): Promise<Hit['event']> {
    const hit = await receiver.next((h) => h.path === path && h.event.type === type && receiver.hits.indexOf(h) >= seen, 5000);
    seen = receiver.hits.indexOf(hit) + 1;
    expect(verify(hit, secret)).toEqual(hit.event);
    for (const token of tokens) expect(hit.body).not.toContain(token);
    expect(hit.event.data).toMatchObject({ client_id: client.client_id, client_name: 'Test App' });
    return hit.event;
  }

  const refresh = (refreshToken: string) => tokenRequest(t, {
    grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, client_secret: client.client_secret,
  });

  test('every approval raises authorization.granted, also when consent was given before and nothing is asked', async () => {
    await subscribed();
    const browser = new Browser(t.baseUrl);
    const first = await browser.authorize(client, user, {}, 'approve');
    expect(first.searchParams.get('code')).toBeTruthy();
    const consented = await nextEvent('authorization.granted', [first.searchParams.get('code')!]);
    expect(consented.data).toEqual({ client_id: client.client_id, client_name: 'Test App', username: user.username, scope: 'openid' });

    // Same browser, same client: the login session and the grant cover it, no page is shown.
    const second = await browser.authorize(client, undefined, {}, 'approve');
    expect(second.searchParams.get('code')).toBeTruthy();
    const silent = await nextEvent('authorization.granted', [second.searchParams.get('code')!]);
    expect(silent.data).toEqual(consented.data);
    expect(silent.id).not.toBe(consented.id);
  });

  test('each refresh raises token.refreshed for the same grant', async () => {
    await subscribed();
    const tokens = await obtainTokens(t, client, user);
    const issued = await nextEvent('token.issued', [tokens.access_token, tokens.refresh_token]);

    const refreshed = await refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    const event = await nextEvent('token.refreshed', [tokens.refresh_token, String(refreshed.body.refresh_token), String(refreshed.body.access_token)]);
    expect(event.data).toMatchObject({ username: user.username, scope: 'openid', grant_id: issued.data.grant_id });
  });

  test.each(['access_token', 'refresh_token'] as const)('revoking an %s at /api/revoke.php raises one token.revoked', async (kind) => {
    await subscribed();
    const tokens = await obtainTokens(t, client, user);
    const issued = await nextEvent('token.issued', []);

    const res = await postForm(t, '/api/revoke.php', { token: tokens[kind] }, { authorization: basicAuth(client) });
    expect(res.status).toBe(200);
    const event = await nextEvent('token.revoked', [tokens.access_token, tokens.refresh_token]);
    expect(event.data).toMatchObject({ reason: 'revocation_request', token_type: kind, grant_id: issued.data.grant_id, username: user.username });
    // One call, one event: nothing else for this endpoint arrives.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.hits.slice(seen).filter((h) => h.path === path)).toEqual([]);
  });

  test('presenting a rotated refresh token again raises token.revoked (refresh_token_reuse)', async () => {
    await subscribed();
    const tokens = await obtainTokens(t, client, user);
    const issued = await nextEvent('token.issued', []);
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
    await nextEvent('token.refreshed', []);

    const reuse = await refresh(tokens.refresh_token);
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe('invalid_grant');
    const event = await nextEvent('token.revoked', [tokens.refresh_token]);
    expect(event.data).toMatchObject({ reason: 'refresh_token_reuse', token_type: 'grant', grant_id: issued.data.grant_id });
  });

  test('a user revoking the application raises token.revoked (user_revoked)', async () => {
    await subscribed();
    const tokens = await obtainTokens(t, client, user);
    const issued = await nextEvent('token.issued', []);

    const browser = new Browser(t.baseUrl);
    const csrfOf = (page: Step) => /name="_csrf" value="([^"]*)"/.exec(page.body)?.[1] ?? '';
    const signIn = await browser.request('/api/applications.php', {
      form: { _csrf: csrfOf(await browser.request('/api/applications.php')), action: 'sign_in', username: user.username, password: user.password },
    });
    expect(signIn.status).toBe(303);
    const revoke = await browser.request('/api/applications.php', {
      form: { _csrf: csrfOf(await browser.request('/api/applications.php')), action: 'revoke', client_id: client.client_id },
    });
    expect(revoke.status).toBe(303);

    const event = await nextEvent('token.revoked', [tokens.access_token, tokens.refresh_token]);
    expect(event.data).toMatchObject({ reason: 'user_revoked', token_type: 'grant', grant_id: issued.data.grant_id, username: user.username });
  });
});
