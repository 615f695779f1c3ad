/**
 * Deletes expired provider models (codes, access and refresh tokens, grants) from
 * `oidc_models`, so storage does not grow without end. Expired rows already read as absent
 * (postgres-adapter.ts); this only reclaims their space.
 *
 * Bounded: a pass deletes at most `batchSize` × `batchesPerPass` rows, one short transaction
 * per batch, oldest first (the `expires_at` index). Safe with several instances: a batch
 * locks its rows with `FOR UPDATE SKIP LOCKED`, so concurrent passes delete disjoint rows
 * and never wait on each other or on a request. `expires_at` is `timestamptz`, so comparing
 * it with `now()` does not depend on the session's time zone.
 *
 * @example const cleanup = startCleanup(db.prisma, { log }); … await cleanup.stop();
 */
import type { PrismaClient } from '../generated/prisma/client.js';

export interface CleanupOptions {
  /** Rows per batch (one DELETE). */
  batchSize?: number;
  /** Batches per pass at most; a pass stops early once a batch comes back short. */
  batchesPerPass?: number;
}

export const CLEANUP_DEFAULTS = { intervalMs: 60_000, batchSize: 1000, batchesPerPass: 10 } as const;

/** One bounded pass; resolves to the number of rows deleted. */
export async function deleteExpired(prisma: PrismaClient, options: CleanupOptions = {}): Promise<number> {
  const { batchSize = CLEANUP_DEFAULTS.batchSize, batchesPerPass = CLEANUP_DEFAULTS.batchesPerPass } = options;
  let deleted = 0;
  for (let batch = 0; batch < batchesPerPass; batch += 1) {
    const count = await prisma.$executeRaw`
      DELETE FROM oidc_models WHERE (type, id) IN (
        SELECT type, id FROM oidc_models
        WHERE expires_at < now()
        ORDER BY expires_at
        LIMIT ${batchSize}
        FOR UPDATE SKIP LOCKED)`;
    deleted += count;
    if (count < batchSize) break;
  }
  return deleted;
}

export interface Cleanup {
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * Runs {@link deleteExpired} every `intervalMs` (the next pass is scheduled when the previous
 * one ends, so passes never overlap). A failed pass (say, the database is down) is logged and
 * the next one runs on schedule.
 */
export function startCleanup(
  prisma: PrismaClient,
  options: CleanupOptions & { intervalMs?: number; log: (error: unknown) => void },
): Cleanup {
  const { intervalMs = CLEANUP_DEFAULTS.intervalMs, log } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = deleteExpired(prisma, options).then(() => undefined, log).finally(() => {
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
