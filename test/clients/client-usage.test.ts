/**
 * Self-registered clients' last use and their removal after DYNAMIC_CLIENT_IDLE_DAYS: a code
 * exchange or refresh records the use at most once a day, inside the request's one write
 * statement (the exchange of a public client costs the round trips of any exchange: one read,
 * one write); the cleanup sweep removes RFC 7591 clients idle that long (or never used since
 * registering that long ago), each with a `client.deleted` audit row, and never a spec client.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { deleteIdleClients } from '../../src/clients/idle-clients.js';
import { createLogger } from '../../src/ops/logger.js';
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

async function exchange(clientId: string) {
  const pkce = pkcePair();
  const code = (await new Browser(t.baseUrl).authorize({ client_id: clientId, client_secret: '', redirect_uri: REDIRECT }, user, pkceParams(pkce))).searchParams.get('code')!;
  return () => tokenRequest(t, { code, client_id: clientId, code_verifier: pkce.verifier });
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

  test('a spec client\'s use is never written', async () => {
    const client = await registerClient(t);
    const code = (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!;
    expect((await tokenRequest(t, { code, client_id: client.client_id, client_secret: client.client_secret })).status).toBe(200);
    expect(await lastUsed(client.client_id)).toBeNull();
  });
});

describe('the idle sweep', () => {
  test('removes RFC 7591 clients idle for the days given, audited; keeps used ones and every spec client', async () => {
    const audit = createAuditLog({ prisma: t.app.db.prisma, logger: createLogger({ level: 'silent' }) });
    const used = await registerPublic();
    await (await exchange(used))();
    const neverUsed = await registerPublic();
    await backdate(neverUsed, 'created_at', 31);
    const longIdle = await registerPublic();
    await (await exchange(longIdle))();
    await backdate(longIdle, 'created_at', 90);
    await backdate(longIdle, 'last_used_at', 31);
    const recent = await registerPublic(); // registered today, never used: kept
    const spec = await registerClient(t);
    await backdate(spec.client_id, 'created_at', 400);

    expect(await deleteIdleClients(t.app.db.prisma, audit, { days: 30, limit: 100 })).toBe(2);
    const left = new Set((await t.app.db.prisma.client.findMany({ select: { clientId: true } })).map((row) => row.clientId));
    expect([used, recent, spec.client_id].every((id) => left.has(id))).toBe(true);
    expect(left.has(neverUsed) || left.has(longIdle)).toBe(false);
    const rows = await t.app.db.prisma.auditEvent.findMany({ where: { event: 'client.deleted', clientId: { in: [neverUsed, longIdle] } } });
    expect(rows.map((row) => [row.clientId, row.actor, (row.detail as Record<string, unknown>).reason])).toEqual(expect.arrayContaining([
      [neverUsed, 'system', 'idle'], [longIdle, 'system', 'idle'],
    ]));
    expect(await deleteIdleClients(t.app.db.prisma, audit, { days: 30, limit: 100 })).toBe(0);

    // A removed client's token requests fail as an unknown client's.
    expect((await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: 'x', client_id: longIdle })).status).toBe(400);
  });
});
