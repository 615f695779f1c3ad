/**
 * The expiry cleanup: a pass deletes expired provider rows in bounded batches, oldest first,
 * and keeps everything unexpired; concurrent passes (several instances) split the work; the
 * periodic job runs until stopped. Finished webhook deliveries leave the delivery log after
 * DELIVERY_LOG_DAYS; pending ones stay. A deleted client's endpoints leave once they have nothing
 * pending, their delivery log first, in bounded batches. Audit rows leave after AUDIT_RETENTION_DAYS;
 * a step that fails does not keep the others from running. Redis needs
 * no job: every key the app writes expires.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { DELIVERY_LOG_DAYS, deleteExpired, deleteOldAuditEvents, deleteOldDeliveries, deleteOldLogouts, deleteRetiredEndpoints, startCleanup } from '../../src/store/cleanup.js';
import { Redis } from 'ioredis';
import { openTestDatabase } from '../helpers/databases.js';
import type { StoreKind, TestStore } from '../helpers/databases.js';
import { createUser, obtainTokens, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { REDIS_URL } from '../helpers/services.js';
import { startTestApp } from '../helpers/test-app.js';

const HOUR = 3600_000;

/** `count` rows of `type`; the i-th expires at `base + i` seconds (null: never). */
async function insertRows(prisma: PrismaClient, type: string, count: number, base: number | null) {
  await prisma.oidcModel.createMany({
    data: Array.from({ length: count }, (_, i) => ({
      type, id: `${type}-${i}`, payload: { i }, grantId: `g-${i}`,
      expiresAt: base === null ? null : new Date(base + i * 1000),
    })),
  });
}

const countWhere = (prisma: PrismaClient, type: string) => prisma.oidcModel.count({ where: { type } });

/** A client with one webhook endpoint per id in `endpoints`. */
async function clientWithEndpoints(prisma: PrismaClient, clientId: string, endpoints: string[]) {
  await prisma.client.create({ data: { clientId, clientSecretHash: 'x', clientName: clientId, redirectUri: 'https://app.example/cb' } });
  for (const id of endpoints) {
    await prisma.webhookEndpoint.create({ data: { id, clientId, url: 'https://app.example/hook', events: ['token.issued', 'token.revoked'], secret: 'whsec_x' } });
  }
}

/** `count` deliveries of one endpoint in `status`, created at `createdAt`. */
const deliveries = (endpointId: string, status: string, count: number, createdAt = new Date()) => Array.from({ length: count }, (_, i) => ({
  id: `msg_${endpointId}_${status}_${createdAt.getTime()}_${i}`, endpointId, eventId: `evt_${i}`, eventType: 'token.issued', payload: {}, status, createdAt,
}));

describe.each<StoreKind>(['postgres', 'embedded'])('deleteExpired (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => { store = await openTestDatabase(kind, { migrated: true }); });
  afterAll(async () => { await store.close(); });
  afterEach(async () => { await store.db.prisma.oidcModel.deleteMany({}); });

  test('one pass deletes at most batchSize × batchesPerPass expired rows, oldest first, and keeps the rest', async () => {
    const { prisma } = store.db;
    await insertRows(prisma, 'AccessToken', 250, Date.now() - 10 * HOUR);
    await insertRows(prisma, 'RefreshToken', 20, Date.now() + HOUR);
    await insertRows(prisma, 'Grant', 5, null);

    expect(await deleteExpired(prisma, { batchSize: 100, batchesPerPass: 2 })).toBe(200);
    const left = await prisma.oidcModel.findMany({ where: { type: 'AccessToken' }, select: { id: true } });
    expect(left.map((row) => row.id).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `AccessToken-${i + 200}`).sort());
    expect(await countWhere(prisma, 'RefreshToken')).toBe(20);
    expect(await countWhere(prisma, 'Grant')).toBe(5);

    expect(await deleteExpired(prisma, { batchSize: 100, batchesPerPass: 2 })).toBe(50);
    expect(await deleteExpired(prisma, { batchSize: 100, batchesPerPass: 2 })).toBe(0);
    expect(await prisma.oidcModel.count()).toBe(25);
  });

  test('a row expiring in the future stays until it has expired', async () => {
    const { prisma } = store.db;
    await insertRows(prisma, 'AuthorizationCode', 1, Date.now() + 1500);
    expect(await deleteExpired(prisma)).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await deleteExpired(prisma)).toBe(1);
  });

  test('the periodic job deletes on its own and stops when told', async () => {
    const { prisma } = store.db;
    const errors: unknown[] = [];
    await insertRows(prisma, 'AccessToken', 30, Date.now() - HOUR);
    const job = startCleanup(prisma, { intervalMs: 50, batchSize: 10, batchesPerPass: 1, auditRetentionDays: 90, log: (error) => errors.push(error) });
    const deadline = Date.now() + 20_000;
    while (await countWhere(prisma, 'AccessToken') > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await countWhere(prisma, 'AccessToken')).toBe(0);
    await job.stop();

    await insertRows(prisma, 'RefreshToken', 5, Date.now() - HOUR);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await countWhere(prisma, 'RefreshToken')).toBe(5);
    expect(errors).toEqual([]);
  });
});

describe.each<StoreKind>(['postgres', 'embedded'])('deleteOldDeliveries (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => { store = await openTestDatabase(kind, { migrated: true }); });
  afterAll(async () => { await store.close(); });

  test('finished deliveries older than the log keeps leave in bounded batches; pending and recent ones stay', async () => {
    const { prisma } = store.db;
    await clientWithEndpoints(prisma, 'c1', ['ep_1']);
    const old = new Date(Date.now() - (DELIVERY_LOG_DAYS + 1) * 24 * HOUR);
    const recent = new Date(Date.now() - HOUR);
    const rows = (status: string, createdAt: Date, count: number) => deliveries('ep_1', status, count, createdAt);
    await prisma.webhookDelivery.createMany({
      data: [...rows('delivered', old, 120), ...rows('failed', old, 10), ...rows('cancelled', old, 10), ...rows('pending', old, 5), ...rows('delivered', recent, 7)],
    });

    expect(await deleteOldDeliveries(prisma, { batchSize: 50, batchesPerPass: 2 })).toBe(100);
    expect(await deleteOldDeliveries(prisma, { batchSize: 50, batchesPerPass: 2 })).toBe(40);
    expect(await deleteOldDeliveries(prisma, { batchSize: 50, batchesPerPass: 2 })).toBe(0);
    const left = await prisma.webhookDelivery.groupBy({ by: ['status'], _count: true, orderBy: { status: 'asc' } });
    expect(left.map((row) => [row.status, row._count])).toEqual([['delivered', 7], ['pending', 5]]);
  });
});

describe.each<StoreKind>(['postgres', 'embedded'])('deleteOldLogouts (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => { store = await openTestDatabase(kind, { migrated: true }); });
  afterAll(async () => { await store.close(); });

  test('finished back-channel logout messages older than the log keeps leave; pending and recent ones stay', async () => {
    const { prisma } = store.db;
    const old = new Date(Date.now() - (DELIVERY_LOG_DAYS + 1) * 24 * HOUR);
    const recent = new Date(Date.now() - HOUR);
    let n = 0;
    const rows = (status: string, createdAt: Date, count: number) => Array.from({ length: count }, () => ({
      id: `bcl_${(n += 1)}`, clientId: 'c1', url: 'https://rp.example/logout', accountId: 'a', status, createdAt,
    }));
    await prisma.backchannelLogout.createMany({ data: [...rows('delivered', old, 60), ...rows('failed', old, 5), ...rows('pending', old, 3), ...rows('delivered', recent, 4)] });
    expect(await deleteOldLogouts(prisma, { batchSize: 50, batchesPerPass: 1 })).toBe(50);
    expect(await deleteOldLogouts(prisma, { batchSize: 50, batchesPerPass: 1 })).toBe(15);
    const left = await prisma.backchannelLogout.groupBy({ by: ['status'], _count: true, orderBy: { status: 'asc' } });
    expect(left.map((row) => [row.status, row._count])).toEqual([['delivered', 4], ['pending', 3]]);
  });
});

describe.each<StoreKind>(['postgres', 'embedded'])('deleteRetiredEndpoints (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => { store = await openTestDatabase(kind, { migrated: true }); });
  afterAll(async () => { await store.close(); });

  test('a deleted client\'s endpoints: their finished deliveries leave in bounded batches, then each endpoint with nothing left; pending ones and live clients\' stay', async () => {
    const { prisma } = store.db;
    await clientWithEndpoints(prisma, 'gone', ['ep_busy', 'ep_waiting']);
    await clientWithEndpoints(prisma, 'live', ['ep_live']);
    await prisma.webhookDelivery.createMany({
      data: [...deliveries('ep_busy', 'delivered', 120), ...deliveries('ep_busy', 'failed', 10), ...deliveries('ep_waiting', 'delivered', 3), ...deliveries('ep_waiting', 'pending', 1), ...deliveries('ep_live', 'delivered', 4)],
    });
    await prisma.client.delete({ where: { clientId: 'gone' } });

    expect(await deleteRetiredEndpoints(prisma, { batchSize: 50, batchesPerPass: 2 })).toBe(100); // the bound: no endpoint yet
    expect(await prisma.webhookEndpoint.count({ where: { clientId: null } })).toBe(2);
    expect(await deleteRetiredEndpoints(prisma, { batchSize: 50, batchesPerPass: 2 })).toBe(33 + 1); // the rest, then ep_busy
    expect((await prisma.webhookEndpoint.findMany({ orderBy: { id: 'asc' } })).map((e) => e.id)).toEqual(['ep_live', 'ep_waiting']);
    expect(await deleteRetiredEndpoints(prisma, { batchSize: 50, batchesPerPass: 2 })).toBe(0); // ep_waiting still has one pending

    await prisma.webhookDelivery.updateMany({ where: { endpointId: 'ep_waiting', status: 'pending' }, data: { status: 'delivered' } });
    expect(await deleteRetiredEndpoints(prisma, { batchSize: 50, batchesPerPass: 2 })).toBe(2);
    expect((await prisma.webhookEndpoint.findMany()).map((e) => e.id)).toEqual(['ep_live']);
    expect(await prisma.webhookDelivery.count()).toBe(4);
  });
});

describe.each<StoreKind>(['postgres', 'embedded'])('deleteOldAuditEvents (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => { store = await openTestDatabase(kind, { migrated: true }); });
  afterAll(async () => { await store.close(); });

  const DAY = 24 * HOUR;
  const rows = (event: string, age: number, count: number) => Array.from({ length: count }, (_, i) => ({
    event, actor: 'operator', userId: `u-${i}`, createdAt: new Date(Date.now() - age), detail: { i },
  }));

  test('rows older than the retention leave in bounded batches, oldest first; newer ones stay', async () => {
    const { prisma } = store.db;
    await prisma.auditEvent.createMany({
      data: [...rows('login.failed', 100 * DAY, 70), ...rows('login.failed', 31 * DAY, 50), ...rows('user.disabled', 29 * DAY, 8), ...rows('login.succeeded', HOUR, 4)],
    });
    expect(await deleteOldAuditEvents(prisma, { days: 30, batchSize: 40, batchesPerPass: 2 })).toBe(80);
    const oldest = await prisma.auditEvent.findFirst({ where: { createdAt: { lt: new Date(Date.now() - 30 * DAY) } }, orderBy: { createdAt: 'asc' } });
    expect(oldest!.createdAt.getTime()).toBeGreaterThan(Date.now() - 32 * DAY); // the 100-day-old rows went first
    expect(await deleteOldAuditEvents(prisma, { days: 30, batchSize: 40, batchesPerPass: 2 })).toBe(40);
    expect(await deleteOldAuditEvents(prisma, { days: 30, batchSize: 40, batchesPerPass: 2 })).toBe(0);
    const left = await prisma.auditEvent.groupBy({ by: ['event'], _count: true, orderBy: { event: 'asc' } });
    expect(left.map((row) => [row.event, row._count])).toEqual([['login.succeeded', 4], ['user.disabled', 8]]);
  });

  test('a step that fails does not keep the others from running: the audit sweep goes on, the failure is logged', async () => {
    const { prisma } = store.db;
    await prisma.auditEvent.deleteMany({});
    await prisma.auditEvent.createMany({ data: [...rows('login.failed', 3 * DAY, 5), ...rows('login.failed', HOUR, 2)] });
    await prisma.$executeRawUnsafe('ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_away'); // the delivery steps fail
    const errors: unknown[] = [];
    const job = startCleanup(prisma, { intervalMs: 50, auditRetentionDays: 2, log: (error) => errors.push(error) });
    try {
      const deadline = Date.now() + 20_000;
      while (await prisma.auditEvent.count() > 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await job.stop();
      await prisma.$executeRawUnsafe('ALTER TABLE webhook_deliveries_away RENAME TO webhook_deliveries');
    }
    expect(await prisma.auditEvent.count()).toBe(2);
    expect(errors.length).toBeGreaterThan(0);
    expect(String(errors[0])).toMatch(/webhook_deliveries/);
  });

  test('the periodic job sweeps with its auditRetentionDays', async () => {
    const { prisma } = store.db;
    await prisma.auditEvent.deleteMany({});
    await prisma.auditEvent.createMany({ data: [...rows('login.failed', 3 * DAY, 5), ...rows('login.failed', DAY - HOUR, 3)] });
    const errors: unknown[] = [];
    const job = startCleanup(prisma, { intervalMs: 50, auditRetentionDays: 2, log: (error) => errors.push(error) });
    const deadline = Date.now() + 20_000;
    while (await prisma.auditEvent.count() > 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    await job.stop();
    expect(await prisma.auditEvent.count()).toBe(3);
    expect(errors).toEqual([]);
  });
});

describe('deleteExpired with several instances (postgres)', () => {
  let store: TestStore;
  beforeAll(async () => { store = await openTestDatabase('postgres', { migrated: true }); });
  afterAll(async () => { await store.close(); });

  test('concurrent passes delete disjoint rows: together exactly the expired ones, each within its bound', async () => {
    const { prisma } = store.db;
    await insertRows(prisma, 'AccessToken', 600, Date.now() - 10 * HOUR);
    await insertRows(prisma, 'Grant', 10, Date.now() + HOUR);
    const others = await Promise.all([store.reopen(), store.reopen()]);
    try {
      const counts = await Promise.all([store.db, ...others].map((db) => deleteExpired(db.prisma, { batchSize: 50, batchesPerPass: 4 })));
      for (const count of counts) expect(count).toBeLessThanOrEqual(200);
      const total = counts.reduce((a, b) => a + b, 0);
      expect(await prisma.oidcModel.count()).toBe(610 - total);
      while (await deleteExpired(prisma, { batchSize: 50, batchesPerPass: 4 }) > 0);
      expect(await countWhere(prisma, 'AccessToken')).toBe(0);
      expect(await countWhere(prisma, 'Grant')).toBe(10);
    } finally {
      await Promise.all(others.map((db) => db.close()));
    }
  });
});

describe('Redis keys expire on their own', () => {
  test('after logins, consents, code exchanges and refreshes, every key under the prefix has a TTL', async () => {
    const t = await startTestApp();
    const redis = new Redis(REDIS_URL);
    try {
      const client = await registerClient(t);
      for (let i = 0; i < 2; i += 1) {
        const tokens = await obtainTokens(t, client, await createUser(t));
        await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id, client_secret: client.client_secret });
      }
      const keys = await redis.keys(`${t.env.REDIS_KEY_PREFIX}*`);
      expect(keys.length).toBeGreaterThan(0);
      const ttls = await Promise.all(keys.map(async (key) => [key, await redis.ttl(key)] as const));
      expect(ttls.filter(([, ttl]) => ttl <= 0)).toEqual([]);
    } finally {
      redis.disconnect();
      await t.close();
    }
  });
});
