/**
 * The audit writer: a row and a `msg: "audit"` line per event, with the same fields; no secret
 * in either; and a change's rows commit with the change or not at all (a rotation that fails
 * leaves no audit row, no outbox row, no log line, and the old secret).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { auditRow, createAuditLog } from '../../src/audit/audit-log.js';
import type { AuditLog } from '../../src/audit/audit-log.js';
import { createRecords } from '../../src/audit/records.js';
import type { ChangeTransaction, Records } from '../../src/audit/records.js';
import { createClientSettings } from '../../src/clients/client-settings.js';
import { createClientStore } from '../../src/clients/client-store.js';
import { hashClientSecret } from '../../src/clients/credentials.js';
import { createLogger } from '../../src/ops/logger.js';
import { NO_METRICS } from '../../src/ops/metrics.js';
import { createWebhookService } from '../../src/webhooks/webhook-service.js';
import { createWebhookEndpoints } from '../../src/webhooks/webhook-endpoints.js';
import { openTestDatabase } from '../helpers/databases.js';
import type { TestStore } from '../helpers/databases.js';
import { createWriteSender } from '../../src/store/write-sender.js';
import { testPolicy } from '../helpers/outbound.js';

const CONTEXT = { actor: 'operator', address: '192.0.2.7', requestId: 'req-42', detail: { os_user: 'ops' } };

describe('auditRow', () => {
  test('names the columns, merges the context detail under the event detail', () => {
    expect(auditRow('user.disabled', { user: 'u-1', detail: { username: 'alice' } }, CONTEXT)).toEqual({
      event: 'user.disabled', actor: 'operator', user_id: 'u-1', client_id: null, address: '192.0.2.7', request_id: 'req-42',
      detail: { os_user: 'ops', username: 'alice' },
    });
    expect(auditRow('login.failed', {}, { actor: 'anonymous' })).toEqual({
      event: 'login.failed', actor: 'anonymous', user_id: null, client_id: null, address: null, request_id: null, detail: {},
    });
  });

  test('a value under a secret field name is never kept, however deep', () => {
    const row = auditRow('client.updated', {
      client: 'c-1',
      detail: { password: 'hunter22', nested: [{ client_secret: 's3cret', Authorization: 'Basic x', kept: 'yes' }], refresh_token: 'rt', code: 'c0de' },
    }, CONTEXT);
    expect(row.detail).toEqual({
      os_user: 'ops', password: '[Redacted]', nested: [{ client_secret: '[Redacted]', Authorization: '[Redacted]', kept: 'yes' }], refresh_token: '[Redacted]', code: '[Redacted]',
    });
  });
});

describe('writing (postgres)', () => {
  let store: TestStore;
  let lines: Record<string, unknown>[];
  let audit: AuditLog;
  let records: Records;
  beforeAll(async () => {
    store = await openTestDatabase('postgres', { migrated: true });
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>); } } });
    audit = createAuditLog({ logger });
    const webhooks = createWebhookService({
      prisma: store.db.prisma, clock: () => new Date(), policy: testPolicy(), retryBaseMs: 1000,
      log: (error) => { throw error; },
    });
    records = createRecords({
      transaction: (run, options) => store.db.prisma.$transaction(run, options), audit, webhooks, metrics: NO_METRICS,
      send: createWriteSender(store.db.sql, { byTurn: false }),
    });
  });
  afterAll(async () => { await store?.close(); });
  beforeEach(async () => {
    lines = [];
    await store.db.prisma.auditEvent.deleteMany({});
  });

  const rows = () => store.db.prisma.auditEvent.findMany({ orderBy: { id: 'asc' } });

  test('the line is the row as stored: secrets in its detail are redacted at any depth before the logger sees it', async () => {
    await records.alone((record) => record.audit('client.updated', { client: 'c-9', detail: { client_secret: 's3cret', nested: { deeper: { password: 'pa55word' } } } }, CONTEXT));
    const line = lines.find((l) => l.msg === 'audit')!;
    expect(line.detail).toEqual({ os_user: 'ops', client_secret: '[Redacted]', nested: { deeper: { password: '[Redacted]' } } });
    expect(JSON.stringify(lines)).not.toMatch(/s3cret|pa55word/);
    const [row] = await store.db.prisma.auditEvent.findMany({ where: { clientId: 'c-9' } });
    expect(row!.detail).toEqual(line.detail);
  });

  test('record: one row and one line with the same fields', async () => {
    await records.alone((record) => record.audit('login.succeeded', { user: 'u-1', client: 'c-1', detail: { page: 'login' } }, CONTEXT));
    expect(await rows()).toEqual([{
      id: expect.any(BigInt), createdAt: expect.any(Date), event: 'login.succeeded', actor: 'operator', userId: 'u-1', clientId: 'c-1',
      address: '192.0.2.7', requestId: 'req-42', detail: { os_user: 'ops', page: 'login' },
    }]);
    expect(lines).toEqual([expect.objectContaining({
      level: 30, msg: 'audit', event: 'login.succeeded', actor: 'operator', user_id: 'u-1', client_id: 'c-1', address: '192.0.2.7', request_id: 'req-42',
      detail: { os_user: 'ops', page: 'login' },
    })]);
  });

  test('within: the lines are logged after the transaction commits; a rollback leaves neither rows nor lines', async () => {
    const failed = audit.within((write) => store.db.prisma.$transaction(async (tx) => {
      await write(tx, 'user.enabled', { user: 'u-2' }, CONTEXT);
      await write(tx, 'user.disabled', { user: 'u-2' }, CONTEXT);
      expect(lines).toEqual([]); // not yet committed: not yet logged
      throw new Error('the change failed');
    }));
    await expect(failed).rejects.toThrow('the change failed');
    expect(await rows()).toEqual([]);
    expect(lines).toEqual([]);

    await audit.within((write) => store.db.prisma.$transaction(async (tx) => {
      await write(tx, 'user.enabled', { user: 'u-2' }, CONTEXT);
    }));
    expect((await rows()).map((row) => row.event)).toEqual(['user.enabled']);
    expect(lines.map((line) => line.event)).toEqual(['user.enabled']);
  });

  test('a secret rotation that fails before its commit leaves no audit row, no webhook event, and the old secret', async () => {
    const { client, clientSecret } = await createClientStore(store.db.prisma, records.change).register({ clientName: 'Rotating', redirectUri: 'https://app.example/cb' });
    const endpoints = createWebhookEndpoints({ prisma: store.db.prisma, changes: records.change, policy: testPolicy(), clock: () => new Date() });
    await endpoints.add(client.clientId, { url: 'http://127.0.0.1:9/hook', events: ['client.secret_rotated'] });
    await store.db.prisma.auditEvent.deleteMany({});
    lines = [];
    // The rotation, its outbox row and its audit row are all written; then the transaction fails.
    const refusing: ChangeTransaction = (change) => records.change(async (tx, record) => {
      await change(tx, record);
      throw new Error('the commit was refused');
    });
    const settings = createClientSettings(refusing);
    await expect(settings.rotateSecret(client.clientId, CONTEXT)).rejects.toThrow('the commit was refused');

    expect(await rows()).toEqual([]);
    expect(lines).toEqual([]);
    expect(await store.db.prisma.webhookDelivery.count({ where: { eventType: 'client.secret_rotated' } })).toBe(0);
    expect((await store.db.prisma.client.findUniqueOrThrow({ where: { clientId: client.clientId } })).clientSecretHash).toBe(hashClientSecret(clientSecret));

    // The same rotation through the real transaction: all three, together.
    await createClientSettings(records.change).rotateSecret(client.clientId, CONTEXT);
    expect((await rows()).map((row) => [row.event, row.clientId])).toEqual([['client.secret_rotated', client.clientId]]);
    expect(await store.db.prisma.webhookDelivery.count({ where: { eventType: 'client.secret_rotated' } })).toBe(1);
  });
});
