/**
 * Health for load balancers, orchestrators and docker-compose, answered before anything else
 * (no rate limit, no store other than the pings):
 *
 * | path              | answers                                                                    |
 * |-------------------|----------------------------------------------------------------------------|
 * | `/healthz/live`   | 200 while the process runs; touches no store (liveness)                    |
 * | `/healthz/ready`  | 200 when every store answered a ping within {@link PING_TIMEOUT_MS}; 503 naming the failing ones, or `stopping` once shutdown began (readiness) |
 * | `/healthz`        | the same as `/healthz/ready` (kept for existing checks)                     |
 *
 * Every check is bounded, so both answer within 2 s whatever the stores do.
 */
import type { Middleware } from 'koa';
import { within } from '../store/store-failure.js';

export const HEALTH_PATH = '/healthz';
export const LIVE_PATH = '/healthz/live';
export const READY_PATH = '/healthz/ready';

/** How long a store's ping may take before readiness counts it as failing. */
export const PING_TIMEOUT_MS = 1000;

export interface HealthOptions {
  /** A ping per store, by the name a 503 reports. */
  checks: Record<string, () => Promise<unknown>>;
  /** True once the instance is shutting down: readiness answers 503 `stopping`. */
  stopping: () => boolean;
}

export function health({ checks, stopping }: HealthOptions): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== 'GET' || (ctx.path !== HEALTH_PATH && ctx.path !== LIVE_PATH && ctx.path !== READY_PATH)) return next();
    ctx.set('Cache-Control', 'no-store');
    if (ctx.path === LIVE_PATH) {
      ctx.body = { status: 'ok' };
      return;
    }
    if (stopping()) {
      ctx.status = 503;
      ctx.body = { status: 'stopping' };
      return;
    }
    const names = Object.keys(checks);
    const results = await Promise.allSettled(names.map((name) => within(PING_TIMEOUT_MS, Promise.resolve().then(checks[name]))));
    const failing = names.filter((_, i) => results[i]!.status === 'rejected');
    ctx.status = failing.length === 0 ? 200 : 503;
    ctx.body = failing.length === 0 ? { status: 'ok' } : { status: 'unavailable', failing };
  };
}
