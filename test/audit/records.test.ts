/**
 * audit/records.ts: one way to record what happened. An audit row, a webhook event and a count
 * are written with the change they describe (the request's one write statement, a statement of
 * their own, or the change's transaction) and told (the audit line logged, the count counted)
 * only once that change committed; a change that rolls back records nothing.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import type { Registry } from 'prom-client';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createRecords } from '../../src/audit/records.js';
import type { Records } from '../../src/audit/records.js';
import { createLogger } from '../../src/ops/logger.js';
import { NO_METRICS } from '../../src/ops/metrics.js';
import { currentState, withRequestState } from '../../src/store/request-state.js';
import { createWriteSender } from '../../src/store/write-sender.js';
import { WRITE } from '../../src/store/statements.js';
import { createWebhookService } from '../../src/webhooks/webhook-service.js';
import { openTestDatabase } from '../helpers/databases.js';
import type { TestStore } from '../helpers/databases.js';
import { testPolicy } from '../helpers/outbound.js';

const CONTEXT = { actor: 'operator', requestId: 'req-7' };
const CLIENT = { client_id: 'c-records', client_name: 'Records App' };

describe('records (postgres)', () => {
  let store: TestStore;
  let records: Records;
  let lines: Record<string, unknown>[];
  let counted: string[];
  let statements: number;
  beforeAll(async () => {
    store = await openTestDatabase('postgres', { migrated: true });
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>); } } });
    const audit = createAuditLog({ logger });
    const webhooks = createWebhookService({ prisma: store.db.prisma, clock: () => new Date(), policy: testPolicy(), retryBaseMs: 1000, log: (error) => { throw error; } });
    const sql: typeof store.db.sql = (query) => {
      if (query.text === WRITE.text) statements += 1;
      return store.db.sql(query);
    };
    records = createRecords({
      transaction: (run, options) => store.db.prisma.$transaction(run, options),
      audit,
      webhooks,
      metrics: { ...NO_METRICS, registry: {} as Registry, tokenIssued: (grantType) => { counted.push(grantType); } },
      send: createWriteSender(sql, { byTurn: false }),
    });
  });
  afterAll(async () => { await store?.close(); });
  beforeEach(async () => {
    lines = [];
    counted = [];
    statements = 0;
    await store.db.prisma.auditEvent.deleteMany({});
  });

  const events = async () => (await store.db.prisma.auditEvent.findMany({ orderBy: { id: 'asc' } })).map((row) => row.event);
  const audited = () => lines.filter((line) => line.msg === 'audit').map((line) => line.event);

  test('request: the records join the request\'s writes and are told once its one statement committed', async () => {
    const send = createWriteSender(store.db.sql, { byTurn: false });
    await withRequestState(send, async () => {
      await records.request((record) => {
        record.audit('consent.granted', { user: 'u-1', client: CLIENT.client_id }, CONTEXT);
        record.event('authorization.granted', CLIENT);
        record.count('tokenIssued', 'authorization_code');
      });
      const { writes } = currentState()!;
      expect([writes.audit.length, writes.events.length]).toEqual([1, 1]); // deferred, not sent
      expect(await events()).toEqual([]);
      expect([audited(), counted]).toEqual([[], []]);
    });
    expect(statements).toBe(0); // the request's own statement, not one of the records'
    expect(await events()).toEqual(['consent.granted']);
    expect([audited(), counted]).toEqual([['consent.granted'], ['authorization_code']]);
  });

  test('request, outside any request: one statement of their own', async () => {
    await records.request((record) => {
      record.audit('token.issued', { client: CLIENT.client_id }, CONTEXT);
      record.count('tokenIssued', 'client_credentials');
    });
    expect(statements).toBe(1);
    expect(await events()).toEqual(['token.issued']);
    expect(counted).toEqual(['client_credentials']);
  });

  test('alone: a statement of its own at once, also inside a request', async () => {
    await withRequestState(createWriteSender(store.db.sql, { byTurn: false }), async () => {
      await records.alone((record) => record.audit('login.failed', { detail: { page: 'login' } }, CONTEXT));
      expect(statements).toBe(1);
      expect(await events()).toEqual(['login.failed']);
      expect(currentState()!.writes.empty).toBe(true);
    });
  });

  test('change: written in its transaction and told after its commit; a change that rolls back records nothing', async () => {
    const failed = records.change(async (tx, record) => {
      await record.audit('user.enabled', { user: 'u-2' }, CONTEXT);
      await record.event('client.updated', CLIENT);
      record.count('tokenIssued', 'refresh_token');
      expect(await tx.auditEvent.count()).toBe(1); // written in the transaction
      throw new Error('the change failed');
    });
    await expect(failed).rejects.toThrow('the change failed');
    expect([await events(), audited(), counted]).toEqual([[], [], []]);

    await records.change(async (_tx, record) => {
      await record.audit('user.enabled', { user: 'u-2' }, CONTEXT);
      record.count('tokenIssued', 'refresh_token');
      expect([audited(), counted]).toEqual([[], []]); // not before the commit
    });
    expect([await events(), audited(), counted]).toEqual([['user.enabled'], ['user.enabled'], ['refresh_token']]);
  });
});
