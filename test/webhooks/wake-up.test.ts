/**
 * An event raised in this process is delivered on the worker's wake-up, never left for the
 * next poll, even when the wake-up lands while a cycle is finishing: that cycle claimed before
 * the message was committed, and its closing schedule must not swallow the wake-up. The
 * interleaving is forced by holding the cycle at its last outbox read (the outbox itself is the
 * real one, on the real database); polling is practically off, so a lost wake-up would leave
 * the message waiting ten minutes.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createRecords } from '../../src/audit/records.js';
import { createClientStore } from '../../src/clients/client-store.js';
import { createLogger } from '../../src/ops/logger.js';
import { NO_METRICS } from '../../src/ops/metrics.js';
import { createWriteSender } from '../../src/store/write-sender.js';
import { createDeliveryWorker } from '../../src/webhooks/delivery.js';
import type { DeliveryWorker } from '../../src/webhooks/delivery.js';
import { createOutbox, enqueue, newEventId } from '../../src/webhooks/outbox.js';
import { sendAttempt } from '../../src/webhooks/send.js';
import { createWebhookService } from '../../src/webhooks/webhook-service.js';
import { createWebhookEndpoints } from '../../src/webhooks/webhook-endpoints.js';
import { openTestDatabase } from '../helpers/databases.js';
import type { StoreKind, TestStore } from '../helpers/databases.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { testPolicy } from '../helpers/outbound.js';

const POLICY = testPolicy();

describe.each<StoreKind>(['postgres', 'embedded'])('worker wake-up (%s)', (kind) => {
  let store: TestStore;
  let receiver: Receiver;
  let worker: DeliveryWorker | undefined;
  beforeAll(async () => {
    store = await openTestDatabase(kind, { migrated: true });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await worker?.stop();
    await receiver?.close();
    await store?.close();
  });

  test('a wake-up during a finishing cycle is not lost', async () => {
    const { prisma } = store.db;
    const audit = createAuditLog({ logger: createLogger({ level: 'silent' }) });
    const webhooks = createWebhookService({
      prisma, clock: () => new Date(), policy: POLICY, retryBaseMs: 1000, log: () => {},
    });
    const records = createRecords({
      transaction: (run, options) => prisma.$transaction(run, options), audit, webhooks, metrics: NO_METRICS, send: createWriteSender(store.db.sql, { byTurn: false }),
    });
    const { client } = await createClientStore(prisma, records.change).register({ clientName: 'Wake', redirectUri: 'http://localhost:9999/cb' });
    const endpoints = createWebhookEndpoints({ prisma, changes: records.change, policy: POLICY, clock: () => new Date() });
    const { endpoint } = await endpoints.add(client.clientId, { url: receiver.url('/wake'), events: ['client.updated'] });

    // The first cycle finds nothing to claim, then waits at its last read until released.
    const outbox = createOutbox(prisma);
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    let reachedLastRead!: () => void;
    const atLastRead = new Promise<void>((resolve) => { reachedLastRead = resolve; });
    let first = true;
    const heldOutbox = {
      ...outbox,
      async nextDue() {
        const due = await outbox.nextDue();
        if (first) {
          first = false;
          reachedLastRead();
          await held;
        }
        return due;
      },
    };
    const errors: unknown[] = [];
    worker = createDeliveryWorker({
      outbox: heldOutbox, clock: () => new Date(), policy: POLICY, retryBaseMs: 1000, send: sendAttempt,
      log: (error) => { errors.push(error); }, pollMs: 600_000,
    });
    worker.start();
    await atLastRead;

    const now = new Date();
    const event = { id: newEventId(), type: 'client.updated' as const, created_at: now.toISOString(), data: { client_id: client.clientId, client_name: 'Wake' } };
    const [messageId] = await enqueue(prisma, event, [endpoint.id], now);
    worker.wake();
    release(); // the cycle ends before a timer set by the wake-up could fire

    const hit = await receiver.next((h) => h.headers['webhook-id'] === messageId, 5000);
    expect(hit.event.id).toBe(event.id);
    expect(errors).toEqual([]);
  });
});
