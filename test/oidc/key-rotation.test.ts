/**
 * A signing-key rotation on two instances sharing one PostgreSQL and Redis, under load: code
 * exchanges, refreshes and userinfo calls run on both throughout while `keys:rotate` takes a key
 * through next → current → retiring → retired, with short windows (helpers/signing-keys.ts).
 *
 * - not one request fails;
 * - both instances sign with the same key at every moment: the old one until the stored switch
 *   time, the new one after it;
 * - an ID token signed before the switch verifies against a JWKS fetched after it, and a JWKS
 *   fetched before the switch already holds the key that signs after it;
 * - the replaced key leaves the JWKS when every token it signed has expired, its private part is
 *   erased, and the audit trail holds the rotation (the operator's) and the retirement (one row,
 *   though two instances saw it).
 *
 * @see docs/signing-keys.md, OpenID Connect Core §10.1.1 (rotation of asymmetric signing keys)
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { JSONWebKeySet } from 'jose';
import { Browser } from '../helpers/browser.js';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { runCli } from '../helpers/cli.js';
import { createUser, obtainTokens, registerClient, tokenRequest, userinfo } from '../helpers/fixtures.js';
import { stateAt } from '../../src/keys/key-schedule.js';
import { signingKeyStore } from '../../src/keys/signing-keys.js';
import { expectPublicOnly, jwksOf, kidOf, kidsOf, POLL_MS, rotate, SHORT_WINDOWS, until } from '../helpers/signing-keys.js';
import type { RotationResult } from '../helpers/signing-keys.js';
import { secondInstance, startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

/**
 * An instance reads the database's clock through a query: its estimate of the switch time can be
 * off by up to half that query's round trip. A request this close to the switch may be served on
 * either side of it.
 */
const CLOCK_MARGIN_MS = 25;
const PUBLISH_AHEAD_MS = 4000;

/** Each key's state now, as `keys:list` reads it (test/cli/keys.test.ts runs the command itself: it takes seconds to start here). */
async function states(t: TestApp): Promise<Record<string, string>> {
  const store = signingKeyStore(t.app.db.prisma);
  const [keys, now] = [await store.read({ withRetired: true }), await store.now()];
  return Object.fromEntries(keys.map((key) => [key.kid, stateAt(key, now.getTime())]));
}

interface Signed { token: string; kid: string; sent: number; received: number; on: string }
interface Snapshot { jwks: JSONWebKeySet; sent: number; received: number; on: string }

describe('a key rotation on two instances under load', () => {
  let a: TestApp;
  let b: TestApp;
  let client: TestClient;
  let user: TestUser;
  let cli: (args: string[]) => ReturnType<typeof runCli>;
  let oldKid: string;
  let rotation: RotationResult;
  let rotateStarted: number;
  /** When keys:rotate committed (the database's time): the new key's currentAt, less the publish-ahead. */
  let rotatedAt: number;
  const signed: Signed[] = [];
  const snapshots: Snapshot[] = [];
  const failures: string[] = [];
  const counts = { refreshed: 0, exchanged: 0, userinfo: 0 };
  const statesSeen: Record<string, string>[] = [];

  beforeAll(async () => {
    a = await startTestApp({ env: SHORT_WINDOWS });
    b = await secondInstance(a);
    cli = (args) => runCli(args, { DATABASE_URL: a.env.DATABASE_URL!, DATA_DIR: a.env.DATA_DIR!, ...SHORT_WINDOWS });
    user = await createUser(a);
    client = await registerClient(a);
    [oldKid] = kidsOf(await jwksOf(a.baseUrl)) as [string];

    let stop = false;
    const instances = [{ t: a, on: 'A' }, { t: b, on: 'B' }];
    const record = (what: string, error: unknown) => { failures.push(`${what}: ${error instanceof Error ? error.message : String(error)}`); };
    const fetchJwks = async (i: number) => {
      const { t, on } = instances[i % 2]!;
      const sent = Date.now();
      snapshots.push({ jwks: await jwksOf(t.baseUrl), sent, received: Date.now(), on });
    };
    // A chain of refreshes (each returns an ID token), alternating instances; userinfo on the other one.
    const refreshes = async (offset: number) => {
      let refreshToken = (await obtainTokens(a, client, user)).refresh_token;
      for (let i = offset; !stop; i += 1) {
        const [here, there] = [instances[i % 2]!, instances[(i + 1) % 2]!];
        const sent = Date.now();
        const res = await tokenRequest(here.t, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, client_secret: client.client_secret });
        if (res.status !== 200) return record(`refresh on ${here.on}`, JSON.stringify(res.body));
        counts.refreshed += 1;
        refreshToken = String(res.body.refresh_token);
        signed.push({ token: String(res.body.id_token), kid: kidOf(String(res.body.id_token)), sent, received: Date.now(), on: here.on });
        const info = await userinfo(there.t, `Bearer ${String(res.body.access_token)}`);
        if (info.status !== 200) record(`userinfo on ${there.on}`, JSON.stringify(info.body));
        else counts.userinfo += 1;
        await fetchJwks(i + 1);
      }
    };
    // Authorizations (the login session kept by the browser) and code exchanges, alternating instances.
    const exchanges = async () => {
      const browser = new Browser(a.baseUrl);
      for (let i = 0; !stop; i += 1) {
        const here = instances[i % 2]!;
        const code = (await browser.authorize(client, user)).searchParams.get('code')!;
        const sent = Date.now();
        const res = await tokenRequest(here.t, { code, client_id: client.client_id, client_secret: client.client_secret });
        if (res.status !== 200) return record(`code exchange on ${here.on}`, JSON.stringify(res.body));
        counts.exchanged += 1;
        signed.push({ token: String(res.body.id_token), kid: kidOf(String(res.body.id_token)), sent, received: Date.now(), on: here.on });
        await fetchJwks(i);
      }
    };
    const load = [refreshes(0), refreshes(1), exchanges()].map((work) => work.catch((error: unknown) => record('load', error)));

    // Traffic under the first key, on both instances, before the rotation.
    const seenOn = (on: string) => snapshots.filter((s) => s.on === on).length >= 3 && signed.filter((s) => s.on === on).length >= 3;
    while (!(seenOn('A') && seenOn('B')) && failures.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    rotateStarted = Date.now();
    rotation = await rotate(cli, `${PUBLISH_AHEAD_MS / 1000}s`);
    rotatedAt = Date.parse(rotation.current_at) - PUBLISH_AHEAD_MS;
    statesSeen.push(await states(a));
    await until(rotation.current_at, 200);
    statesSeen.push(await states(b));
    await until(rotation.replaces.retired_at, 3 * POLL_MS); // the retired key is erased at a read after that
    statesSeen.push(await states(a));
    stop = true;
    await Promise.all(load);
  }, 180_000);
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  test('the rotation went through next → current → retiring → retired, and no request failed', () => {
    expect(failures).toEqual([]);
    expect(rotation.replaces.kid).toBe(oldKid);
    expect(statesSeen).toEqual([
      { [rotation.kid]: 'next', [oldKid]: 'current' },
      { [rotation.kid]: 'current', [oldKid]: 'retiring' },
      { [rotation.kid]: 'current', [oldKid]: 'retired' },
    ]);
    // Load on both sides of each boundary.
    const switchAt = Date.parse(rotation.current_at);
    expect(signed.filter((s) => s.received < switchAt).map((s) => s.on)).toEqual(expect.arrayContaining(['A', 'B']));
    expect(signed.filter((s) => s.sent > switchAt).map((s) => s.on)).toEqual(expect.arrayContaining(['A', 'B']));
    expect(counts.exchanged).toBeGreaterThan(2);
    expect(counts.userinfo).toBe(counts.refreshed);
  });

  test('both instances sign with the old key until the stored switch time and with the new one after it', () => {
    const switchAt = Date.parse(rotation.current_at);
    const before = signed.filter((s) => s.received < switchAt - CLOCK_MARGIN_MS);
    const after = signed.filter((s) => s.sent > switchAt + CLOCK_MARGIN_MS);
    expect(before.length).toBeGreaterThan(5);
    expect(after.length).toBeGreaterThan(5);
    expect(new Set(before.map((s) => s.kid))).toEqual(new Set([oldKid]));
    expect(new Set(after.map((s) => s.kid))).toEqual(new Set([rotation.kid]));
  });

  test('each JWKS holds what the schedule publishes: the new key from its first read on, the old one until it retires', () => {
    const published = (from: number, to: number) => snapshots.filter((s) => s.sent > from && s.received < to);
    const before = published(0, rotateStarted);
    const ahead = published(rotatedAt + 2 * POLL_MS, Date.parse(rotation.current_at));
    const overlap = published(Date.parse(rotation.current_at), Date.parse(rotation.replaces.retired_at) - CLOCK_MARGIN_MS);
    const afterwards = published(Date.parse(rotation.replaces.retired_at) + CLOCK_MARGIN_MS, Infinity);
    for (const window of [before, ahead, overlap, afterwards]) expect(new Set(window.map((s) => s.on))).toEqual(new Set(['A', 'B']));
    for (const s of before) expect(kidsOf(s.jwks)).toEqual([oldKid]);
    for (const s of [...ahead, ...overlap]) expect(kidsOf(s.jwks)).toEqual([oldKid, rotation.kid].sort());
    for (const s of afterwards) expect(kidsOf(s.jwks)).toEqual([rotation.kid]);
    for (const s of snapshots) expectPublicOnly(s.jwks);
  });

  test('an ID token signed before the switch verifies against every JWKS fetched after it, until it expires', async () => {
    const switchAt = Date.parse(rotation.current_at);
    const lastOld = signed.filter((s) => s.kid === oldKid).at(-1)!;
    const expires = decodeJwt(lastOld.token).exp! * 1000;
    const later = snapshots.filter((s) => s.sent > switchAt && s.received < expires);
    expect(later.length).toBeGreaterThan(2);
    for (const snapshot of later) {
      const { payload } = await jwtVerify(lastOld.token, createLocalJWKSet(snapshot.jwks), { issuer: a.baseUrl, audience: client.client_id, currentDate: new Date(snapshot.received) });
      expect(payload.sub).toBeDefined();
    }
  });

  test('a JWKS fetched before the switch already holds the key that signs after it', async () => {
    const switchAt = Date.parse(rotation.current_at);
    const earlier = snapshots.filter((s) => s.sent > rotatedAt + 2 * POLL_MS && s.received < switchAt);
    const firstNew = signed.filter((s) => s.kid === rotation.kid).slice(0, 4);
    expect(earlier.length).toBeGreaterThan(2);
    expect(new Set(firstNew.map((s) => s.on))).toEqual(new Set(['A', 'B']));
    for (const snapshot of earlier) {
      for (const token of firstNew) {
        await jwtVerify(token.token, createLocalJWKSet(snapshot.jwks), { issuer: a.baseUrl, audience: client.client_id, currentDate: new Date(token.received) });
      }
    }
  });

  test('the retired key is erased from the table; the rotation and the retirement are audited once each', async () => {
    const rows = await a.app.db.prisma.signingKey.findMany({ orderBy: { currentAt: 'asc' } });
    expect(rows.map((row) => [row.kid, row.privateJwk === null])).toEqual([[oldKid, true], [rotation.kid, false]]);
    expect(rows[1]!.privateJwk).toMatch(/^v1\.[0-9a-f]{16}\.[\w-]+\.[\w-]+\.[\w-]+$/);
    const audited = await a.app.db.prisma.auditEvent.findMany({ where: { event: { startsWith: 'key.' } }, orderBy: { id: 'asc' } });
    expect(audited.map((row) => [row.event, row.actor])).toEqual([['key.rotated', 'operator'], ['key.retired', 'system']]);
    expect(audited[0]!.detail).toMatchObject({ kid: rotation.kid, replaces: oldKid, current_at: rotation.current_at, replaced_retired_at: rotation.replaces.retired_at });
    expect(audited[1]!.detail).toMatchObject({ kid: oldKid, retired_at: rotation.replaces.retired_at });
  });

  test('the providers built for the new keys report their events as the first one did (every refresh audited)', async () => {
    expect(await a.app.db.prisma.auditEvent.count({ where: { event: 'token.refreshed' } })).toBe(counts.refreshed);
    expect(await a.app.db.prisma.auditEvent.count({ where: { event: 'token.issued' } })).toBe(counts.exchanged + 2); // and the two chains' first exchanges
  });
});
