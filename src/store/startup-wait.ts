/**
 * At start-up, a store that does not answer yet is waited for, within STORES_STARTUP_TIMEOUT_MS:
 * under docker compose or Kubernetes the service may start before PostgreSQL or Redis listens (a
 * first start still initialising its data, a service name not yet in DNS, both restarted at once),
 * and exiting at the first refusal would leave the stack dead or the pod in a crash loop.
 *
 * Only a store that is not there is waited for (`isStoreFailure`: refused, unknown host, timed out,
 * starting up), one attempt a second, each failure reported (a log line); a refusal that waiting
 * cannot mend (a wrong password, a pooler that ignores the bounds: a ConfigError) stops start-up at
 * once. Each attempt keeps its own bound (DATABASE_CONNECT_TIMEOUT_MS, REDIS_CONNECT_TIMEOUT_MS).
 *
 * @example const wait = startupWait(60_000, (store, reason, leftMs) => logger.warn(…));
 *          const redis = await wait.until('redis', () => connectRedis(url, timeouts));
 */
import type { StoreName } from '../errors.js';
import { isStoreFailure } from './store-failure.js';

/** Between two attempts at a store that did not answer. */
export const STARTUP_RETRY_MS = 1000;

/** Told of each failed attempt that will be retried: which store, why (the error's message), how long the wait may still last. */
export type OnRetry = (store: StoreName, reason: string, leftMs: number) => void;

export interface StartupWait {
  /** `open`'s result, once a call of it succeeds; its error when it is not a store failure, or when the wait is over. */
  until<T>(store: StoreName, open: () => Promise<T>): Promise<T>;
}

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** One wait for every store opened at start-up: `waitMs` from now, shared. */
export function startupWait(waitMs: number, onRetry: OnRetry): StartupWait {
  const deadline = Date.now() + waitMs;
  return {
    async until(store, open) {
      for (;;) {
        try {
          return await open();
        } catch (error) {
          if (!isStoreFailure(error)) throw error;
          const leftMs = deadline - Date.now();
          if (leftMs <= 0) {
            throw new Error(`${store} did not answer within STORES_STARTUP_TIMEOUT_MS (${waitMs} ms): ${reasonOf(error)}`, { cause: error });
          }
          onRetry(store, reasonOf(error), leftMs);
          await new Promise((resolve) => setTimeout(resolve, Math.min(STARTUP_RETRY_MS, leftMs)));
        }
      }
    },
  };
}
