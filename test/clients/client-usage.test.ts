/**
 * Self-registered clients' last use and their removal after DYNAMIC_CLIENT_IDLE_DAYS: a code
 * exchange or refresh records the use at most once a day, inside the request's one write
 * statement (the exchange of a public client costs the round trips of any exchange: one read,
 * one write); the cleanup sweep removes RFC 7591 clients idle that long (or never used since
 * registering that long ago) and spec-shape clients never used since registering that long ago,
 * each with a `client.deleted` audit row, and never an operator's client.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { deleteIdleClients } from '../../src/clients/idle-clients.js';
import { Browser } from '../helpers/browser.js';
import type { TestUser } from '../helpers/browser.js';
import { createUser, registerClient, registerDynamicClient, tokenRequest } from '../helpers/fixtures.js';
import { pkcePair, pkceParams } from '../helpers/pkce.js';
import { countRoundTrips } from '../helpers/round-trips.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const REDIRECT = 'http://127.0.0.1:9999/callback';
let t: TestApp;
let user: TestUser;
beforeAll(async () => {
  t = await startTestApp();
  user = await createUser(t);
});
afterAll(async () => { await t?.close(); });

const registerPublic = async () => (await registerDynamicClient(t, {
  redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'],
})).client_id;

/** A code for the client, and the exchange that redeems it (with PKCE, or with `secret` for a confidential client). */
async function exchange(clientId: string, secret?: string) {
  const pkce = pkcePair();
  const redirect = secret === undefined ? REDIRECT : 'http://localhost:9999/callback';
  const code = (await new Browser(t.baseUrl).authorize({ client_id: clientId, client_secret: secret ?? '', redirect_uri: redirect }, user, pkceParams(pkce))).searchParams.get('code')!;
  return () => tokenRequest(t, { code, client_id: clientId, ...(secret === undefined ? { code_verifier: pkce.verifier } : { client_secret: secret, code_verifier: pkce.verifier }) });
}

/** A client an operator created (clients:create). */
async function operatorClient() {
  const { client, clientSecret } = await t.app.clients.register({ clientName: 'Operator App', redirectUri: 'http://localhost:9999/callback' }, undefined, 'operator');
  return { client_id: client.clientId, client_secret: clientSecret, redirect_uri: client.redirectUri! };
}

const lastUsed = async (clientId: string) => (await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId } })).lastUsedAt;
const backdate = (clientId: string, column: 'created_at' | 'last_used_at', days: number) => t.app.db.prisma.$executeRawUnsafe(
  `UPDATE clients SET ${column} = now() - make_interval(days => $2) WHERE client_id = $1`, clientId, days,
);

describe('last use', () => {
  test('recorded by the first exchange, in its write statement: one read and one write, as any exchange', async () => {
    const clientId = await registerPublic();
    expect(await lastUsed(clientId)).toBeNull();
    const redeem = await exchange(clientId);
    const trips = countRoundTrips(t.server, [Number(new URL(t.env.REDIS_URL!).port || 6379)]);
    let res: Awaited<ReturnType<typeof redeem>> | undefined;
    const counted = await trips.during(async () => { res = await redeem(); });
    expect(res!.status).toBe(200);
    expect({ postgres: counted.postgres, log: counted.log }).toEqual({ postgres: 2, log: expect.any(Array) });
    const first = await lastUsed(clientId);
    expect(Math.abs(first!.getTime() - Date.now())).toBeLessThan(60_000);

    // Within the day, not again; a day later, a refresh records it anew.
    const second = await (await exchange(clientId))();
    expect(await lastUsed(clientId)).toEqual(first);
    await backdate(clientId, 'last_used_at', 2);
    const refreshed = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: second.body.refresh_token as string, client_id: clientId });
    expect(refreshed.status).toBe(200);
    expect((await lastUsed(clientId))!.getTime()).toBeGreaterThan(first!.getTime() - 1000);
  });

  test('a client that registered itself in the spec\'s shape: its use is written too; an operator\'s client\'s never', async () => {
    const client = await registerClient(t);
    expect(await lastUsed(client.client_id)).toBeNull();
    const code = (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!;
    expect((await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret })).status).toBe(200);
    expect(await lastUsed(client.client_id)).not.toBeNull();

    const operator = await operatorClient();
    const theirs = (await new Browser(t.baseUrl).authorize(operator, user)).searchParams.get('code')!;
    expect((await tokenRequest(t, { code: theirs, client_id: operator.client_id, client_secret: operator.client_secret })).status).toBe(200);
    expect(await lastUsed(operator.client_id)).toBeNull();
  });
});

describe('the idle sweep', () => {
  test('removes RFC 7591 clients idle for the days given and spec-shape clients never used, audited; keeps used ones and every operator client', async () => {
    const used = await registerPublic();
    await (await exchange(used))();
    const neverUsed = await registerPublic();
    await backdate(neverUsed, 'created_at', 31);
    const longIdle = await registerPublic();
    await (await exchange(longIdle))();
    await backdate(longIdle, 'created_at', 90);
    await backdate(longIdle, 'last_used_at', 31);
    const recent = await registerPublic(); // registered today, never used: kept
    // The spec's shape: never used since it registered itself 31 days ago (removed), used once long ago (kept).
    const specNeverUsed = (await registerClient(t)).client_id;
    await backdate(specNeverUsed, 'created_at', 31);
    const specUsed = await registerClient(t);
    await (await exchange(specUsed.client_id, specUsed.client_secret))();
    await backdate(specUsed.client_id, 'created_at', 400);
    await backdate(specUsed.client_id, 'last_used_at', 399);
    // An operator's client is never removed, used or not.
    const operator = (await operatorClient()).client_id;
    await backdate(operator, 'created_at', 400);

    expect(await deleteIdleClients(t.app.records.change, { days: 30, limit: 100 })).toBe(3);
    const left = new Set((await t.app.db.prisma.client.findMany({ select: { clientId: true } })).map((row) => row.clientId));
    expect([used, recent, specUsed.client_id, operator].every((id) => left.has(id))).toBe(true);
    expect(left.has(neverUsed) || left.has(longIdle) || left.has(specNeverUsed)).toBe(false);
    const rows = await t.app.db.prisma.auditEvent.findMany({ where: { event: 'client.deleted', clientId: { in: [neverUsed, longIdle, specNeverUsed] } } });
    expect(rows.map((row) => [row.clientId, row.actor, (row.detail as Record<string, unknown>).reason])).toEqual(expect.arrayContaining([
      [neverUsed, 'system', 'idle'], [longIdle, 'system', 'idle'], [specNeverUsed, 'system', 'idle'],
    ]));
    expect(await deleteIdleClients(t.app.records.change, { days: 30, limit: 100 })).toBe(0);

    // A removed client's token requests fail as an unknown client's.
    expect((await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: 'x', client_id: longIdle })).status).toBe(400);
  });
});
