/**
 * Deletes expired provider models (codes, access and refresh tokens, grants) from
 * `oidc_models` (sessions' records of their applications among them), finished webhook deliveries
 * and back-channel logout messages older than {@link DELIVERY_LOG_DAYS} days, the
 * endpoints of deleted clients once they have nothing left to send, and
 * audit rows older than AUDIT_RETENTION_DAYS, so storage does not grow without end. Expired rows already read as absent
 * (oidc/adapter.ts); this only reclaims their space.
 *
 * Bounded: a pass deletes at most `batchSize` × `batchesPerPass` rows, one short transaction
 * per batch, oldest first (the `expires_at` index). Safe with several instances: a batch
 * locks its rows with `FOR UPDATE SKIP LOCKED`, so concurrent passes delete disjoint rows
 * and never wait on each other or on a request. `expires_at` is `timestamptz`, so comparing
 * it with `now()` does not depend on the session's time zone.
 *
 * The two logs (deliveries, audit) are swept the same way by `created_at` (their own indexes).
 *
 * @example const cleanup = startCleanup(db.prisma, { auditRetentionDays: 90, log }); … await cleanup.stop();
 */
import { Prisma } from '../generated/prisma/client.js';
import type { PrismaClient } from '../generated/prisma/client.js';

export interface CleanupOptions {
  /** Rows per batch (one DELETE). */
  batchSize?: number;
  /** Batches per pass at most; a pass stops early once a batch comes back short. */
  batchesPerPass?: number;
}

export const CLEANUP_DEFAULTS = { intervalMs: 60_000, batchSize: 1000, batchesPerPass: 10 } as const;

/**
 * How long a finished webhook delivery (delivered, failed after its retries, cancelled) stays
 * in the delivery log. Pending ones are never removed here.
 */
export const DELIVERY_LOG_DAYS = 30;

/** Runs `deleteBatch(limit)` until a batch comes back short or the pass's batches are spent. */
async function boundedPass(options: CleanupOptions, deleteBatch: (limit: number) => Promise<number>): Promise<number> {
  const { batchSize = CLEANUP_DEFAULTS.batchSize, batchesPerPass = CLEANUP_DEFAULTS.batchesPerPass } = options;
  let deleted = 0;
  for (let batch = 0; batch < batchesPerPass; batch += 1) {
    const count = await deleteBatch(batchSize);
    deleted += count;
    if (count < batchSize) break;
  }
  return deleted;
}

/** One bounded pass over expired provider rows; resolves to the number of rows deleted. */
export function deleteExpired(prisma: PrismaClient, options: CleanupOptions = {}): Promise<number> {
  return boundedPass(options, (limit) => prisma.$executeRaw`
    DELETE FROM oidc_models WHERE (type, id) IN (
      SELECT type, id FROM oidc_models
      WHERE expires_at < now()
      ORDER BY expires_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)`);
}

/** One bounded pass over the rows of a log older than `days` (and matching `where`), oldest first. */
function deleteOlderThan(prisma: PrismaClient, log: 'webhook_deliveries' | 'backchannel_logouts' | 'audit_events', days: number, where: Prisma.Sql, options: CleanupOptions): Promise<number> {
  const table = Prisma.raw(log);
  return boundedPass(options, (limit) => prisma.$executeRaw`
    DELETE FROM ${table} WHERE id IN (
      SELECT id FROM ${table}
      WHERE created_at < now() - make_interval(days => ${days}::int) AND ${where}
      ORDER BY created_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)`);
}

/** One bounded pass over the webhook delivery log; resolves to the number of rows deleted. */
export function deleteOldDeliveries(prisma: PrismaClient, options: CleanupOptions & { days?: number } = {}): Promise<number> {
  return deleteOlderThan(prisma, 'webhook_deliveries', options.days ?? DELIVERY_LOG_DAYS, Prisma.sql`status <> 'pending'`, options);
}

/** One bounded pass over finished back-channel logout messages (their own outbox), kept as long as webhook deliveries. */
export function deleteOldLogouts(prisma: PrismaClient, options: CleanupOptions & { days?: number } = {}): Promise<number> {
  return deleteOlderThan(prisma, 'backchannel_logouts', options.days ?? DELIVERY_LOG_DAYS, Prisma.sql`status <> 'pending'`, options);
}

/**
 * One bounded pass over the webhook endpoints of deleted clients (client_id NULL): until they have
 * nothing pending the worker still delivers their messages (the `token.revoked` events of the
 * client's deletion among them); then their delivery log leaves in bounded batches (a busy
 * client's can hold millions of rows: one statement for it all would outlast the statement
 * timeout), and each endpoint left with no delivery goes. Resolves to the rows deleted.
 */
export async function deleteRetiredEndpoints(prisma: PrismaClient, options: CleanupOptions = {}): Promise<number> {
  const deliveries = await boundedPass(options, (limit) => prisma.$executeRaw`
    DELETE FROM webhook_deliveries WHERE id IN (
      SELECT d.id FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE e.client_id IS NULL AND d.status <> 'pending'
      LIMIT ${limit}
      FOR UPDATE OF d SKIP LOCKED)`);
  const endpoints = await boundedPass(options, (limit) => prisma.$executeRaw`
    DELETE FROM webhook_endpoints WHERE id IN (
      SELECT e.id FROM webhook_endpoints e
      WHERE e.client_id IS NULL
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = e.id)
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)`);
  return deliveries + endpoints;
}

/** One bounded pass over the audit trail: rows older than `days` (AUDIT_RETENTION_DAYS); resolves to the number deleted. */
export function deleteOldAuditEvents(prisma: PrismaClient, options: CleanupOptions & { days: number }): Promise<number> {
  return deleteOlderThan(prisma, 'audit_events', options.days, Prisma.sql`true`, options);
}

export interface Cleanup {
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * Runs {@link deleteExpired}, {@link deleteOldDeliveries}, {@link deleteOldLogouts}, {@link deleteRetiredEndpoints} and {@link deleteOldAuditEvents} every
 * `intervalMs` (the next pass is scheduled when the previous one ends, so passes never overlap).
 * A failed step (say, the database is down) is logged, the pass goes on with the next step, and
 * the next pass runs on schedule.
 */
export function startCleanup(
  prisma: PrismaClient,
  options: CleanupOptions & {
    intervalMs?: number;
    auditRetentionDays: number;
    log: (error: unknown) => void;
    /** One more bounded sweep (clients/idle-clients.ts): one batch of at most `limit` rows, resolving to how many it removed. */
    sweeps?: readonly ((limit: number) => Promise<number>)[];
  },
): Cleanup {
  const { intervalMs = CLEANUP_DEFAULTS.intervalMs, log } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const steps = [
    () => deleteExpired(prisma, options),
    () => deleteOldDeliveries(prisma, options),
    () => deleteOldLogouts(prisma, options),
    () => deleteRetiredEndpoints(prisma, options),
    () => deleteOldAuditEvents(prisma, { ...options, days: options.auditRetentionDays }),
    ...(options.sweeps ?? []).map((sweep) => () => boundedPass(options, sweep)),
  ];
  // Each step on its own: one that fails (a statement timeout, say) never starves the others.
  const pass = async () => {
    for (const step of steps) await step().catch(log);
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass().finally(() => {
        running = undefined;
        schedule();
      });
    }, intervalMs);
    timer.unref();
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
