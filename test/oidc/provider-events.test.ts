/**
 * src/oidc/provider-events.ts on a bare provider with refresh tokens and RFC 7009 revocation:
 * a refresh records token.refreshed (audit row, webhook event, a token counted), a revocation one
 * token.revoked (revocation_request), reuse of a rotated refresh token token.revoked
 * (refresh_token_reuse) and the audit row token.reuse_detected. Records are counted only once
 * their writes committed (here, a sender that commits everything).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import Koa from 'koa';
import mount from 'koa-mount';
import Provider from 'oidc-provider';
import type { AuditFields } from '../../src/audit/audit-log.js';
import { recordProviderEvents } from '../../src/oidc/provider-events.js';
import { Writes } from '../../src/store/request-state.js';
import type { RaiseData } from '../../src/webhooks/webhook-service.js';

const CLIENT = { client_id: 'bare-client', client_secret: 'bare-secret-'.repeat(4), client_name: 'Bare App' };
const raised: { type: string; data: RaiseData }[] = [];
const audited: { event: string; fields: AuditFields }[] = [];
const issued: string[] = [];
let provider: Provider;
let server: http.Server;
let origin: string;

beforeAll(async () => {
  provider = new Provider('http://localhost', {
    clients: [{
      ...CLIENT, redirect_uris: ['http://localhost/cb'], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'client_secret_post',
    }],
    features: { revocation: { enabled: true }, devInteractions: { enabled: false } },
    issueRefreshToken: () => true,
    rotateRefreshToken: true,
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  });
  recordProviderEvents({
    provider,
    records: {
      async request(run) {
        const writes = new Writes();
        run({
          audit: (event, fields) => { writes.committed.push(() => audited.push({ event, fields })); },
          event: (type, data) => { writes.committed.push(() => raised.push({ type, data })); },
          count: (_counter, grantType) => { writes.committed.push(() => issued.push(grantType)); },
        }, writes);
        for (const done of writes.committed) done(new Set()); // a sender that commits everything
      },
    },
    log: (error) => { throw error; },
  });
  const app = new Koa();
  app.use(mount(provider));
  server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => { await new Promise((resolve) => server.close(resolve)); });

/** A grant and a refresh token for it, as a code exchange would leave them. */
async function refreshToken(): Promise<{ value: string; grantId: string }> {
  const grant = new provider.Grant({ accountId: 'account-1', clientId: CLIENT.client_id });
  grant.addOIDCScope('openid');
  const grantId = await grant.save();
  const client = await provider.Client.find(CLIENT.client_id);
  const token = new provider.RefreshToken({ accountId: 'account-1', client: client!, grantId, scope: 'openid', gty: 'authorization_code' } as never);
  return { value: await token.save(), grantId };
}

async function post(path: string, form: Record<string, string>) {
  const res = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: CLIENT.client_id, client_secret: CLIENT.client_secret, ...form }),
  });
  return { status: res.status, body: await res.text() };
}

const clear = () => { raised.length = 0; audited.length = 0; issued.length = 0; };

describe('provider events → audit rows, webhook events, metrics', () => {
  test('a refresh raises token.refreshed; reusing the rotated token raises token.revoked (refresh_token_reuse)', async () => {
    clear();
    const { value, grantId } = await refreshToken();
    const refreshed = await post('/token', { grant_type: 'refresh_token', refresh_token: value });
    expect(refreshed.status).toBe(200);
    expect(raised).toEqual([{ type: 'token.refreshed', data: { client_id: CLIENT.client_id, client_name: 'Bare App', account_id: 'account-1', grant_id: grantId, scope: 'openid' } }]);
    expect(audited).toEqual([{ event: 'token.refreshed', fields: { user: 'account-1', client: CLIENT.client_id, detail: { grant_id: grantId, scope: 'openid' } } }]);
    expect(issued).toEqual(['refresh_token']);

    const reused = await post('/token', { grant_type: 'refresh_token', refresh_token: value });
    expect(reused.status).toBe(400);
    expect(raised[1]).toEqual({
      type: 'token.revoked',
      data: { client_id: CLIENT.client_id, client_name: 'Bare App', account_id: 'account-1', grant_id: grantId, token_type: 'grant', reason: 'refresh_token_reuse' },
    });
    expect(raised).toHaveLength(2);
    expect(audited[1]).toEqual({ event: 'token.reuse_detected', fields: { user: 'account-1', client: CLIENT.client_id, detail: { reason: 'refresh_token_reuse', token_type: 'grant', grant_id: grantId } } });
    expect(issued).toEqual(['refresh_token']);
  });

  test('RFC 7009 revocation of a refresh token raises one token.revoked (revocation_request)', async () => {
    clear();
    const { value, grantId } = await refreshToken();
    expect((await post('/token/revocation', { token: value })).status).toBe(200);
    expect(raised).toEqual([{
      type: 'token.revoked',
      data: { client_id: CLIENT.client_id, client_name: 'Bare App', account_id: 'account-1', grant_id: grantId, token_type: 'refresh_token', reason: 'revocation_request' },
    }]);
    expect(audited).toEqual([{ event: 'token.revoked', fields: { user: 'account-1', client: CLIENT.client_id, detail: { reason: 'revocation_request', token_type: 'refresh_token', grant_id: grantId } } }]);
  });

  test('RFC 7009 revocation of an access token (no grant.revoked) still raises token.revoked', async () => {
    clear();
    const { value, grantId } = await refreshToken();
    const refreshed = JSON.parse((await post('/token', { grant_type: 'refresh_token', refresh_token: value })).body) as { access_token: string };
    clear();
    expect((await post('/token/revocation', { token: refreshed.access_token })).status).toBe(200);
    expect(raised).toEqual([{
      type: 'token.revoked',
      data: { client_id: CLIENT.client_id, client_name: 'Bare App', account_id: 'account-1', grant_id: grantId, token_type: 'access_token', reason: 'revocation_request' },
    }]);
  });
});
