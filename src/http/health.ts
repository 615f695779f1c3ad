/**
 * Health for load balancers, orchestrators and docker-compose, answered before anything else
 * (no rate limit, no store other than the pings):
 *
 * | path              | answers                                                                    |
 * |-------------------|----------------------------------------------------------------------------|
 * | `/healthz/live`   | 200 while the process runs; touches no store (liveness)                    |
 * | `/healthz/ready`  | 200 when every store answered a ping within {@link PING_TIMEOUT_MS} (a check at most {@link READY_CACHE_MS} old); 503 naming the failing ones (and, behind a pooler or Sentinel, what it sees: `details`), or `stopping` once shutdown began (readiness) |
 * | `/healthz`        | the same as `/healthz/ready` (kept for existing checks)                     |
 *
 * Every check is bounded, so both answer within 2 s whatever the stores do. Readiness is
 * answered to anyone, before the rate limits: it answers from one check of the stores shared by
 * every request in the {@link READY_CACHE_MS} after it began, so however often it is asked each
 * store is pinged about once a second (and a failing store shows within that second).
 */
import type { Middleware } from 'koa';
import { within } from '../store/store-failure.js';

export const HEALTH_PATH = '/healthz';
export const LIVE_PATH = '/healthz/live';
export const READY_PATH = '/healthz/ready';

/** How long one check of the stores answers readiness, from when it began. */
export const READY_CACHE_MS = 1000;

/** How long a store's ping may take before readiness counts it as failing. */
export const PING_TIMEOUT_MS = 1000;

/** How long a failing store's state may take to read, after its ping (the two within 2 s). */
export const STATE_TIMEOUT_MS = 900;

/**
 * A store's ping and, for a store reached through a pooler or Sentinel, what that one sees when
 * the ping fails (a 503's `details`, so an operator knows where to look).
 */
export interface Check {
  ping: () => Promise<unknown>;
  state?: (() => Promise<string | undefined> | string | undefined) | undefined;
}

export interface HealthOptions {
  /** A check per store, by the name a 503 reports. */
  checks: Record<string, Check>;
  /** True once the instance is shutting down: readiness answers 503 `stopping`. */
  stopping: () => boolean;
}

interface Readiness {
  status: 200 | 503;
  body: Record<string, unknown>;
}

/** Pings every store (bounded); a failing one's pooler or Sentinel is asked what it sees. */
async function readiness(checks: Record<string, Check>): Promise<Readiness> {
  const names = Object.keys(checks);
  const results = await Promise.allSettled(names.map((name) => within(PING_TIMEOUT_MS, Promise.resolve().then(checks[name]!.ping))));
  const failing = names.filter((_, i) => results[i]!.status === 'rejected');
  if (failing.length === 0) return { status: 200, body: { status: 'ok' } };
  const details = await statesOf(failing.map((name) => [name, checks[name]!]));
  return { status: 503, body: { status: 'unavailable', failing, ...(Object.keys(details).length > 0 ? { details } : {}) } };
}

export function health({ checks, stopping }: HealthOptions): Middleware {
  let last: { began: number; answer: Promise<Readiness> } | undefined;
  const ready = () => {
    const now = Date.now();
    if (!last || now - last.began >= READY_CACHE_MS || now < last.began) last = { began: now, answer: readiness(checks) };
    return last.answer;
  };
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
    const { status, body } = await ready();
    ctx.status = status;
    ctx.body = body;
  };
}

/** What the failing stores' poolers or Sentinels see, for those that can tell; bounded. */
async function statesOf(failing: [string, Check][]): Promise<Record<string, string>> {
  const told = await Promise.all(failing.map(async ([name, check]) => {
    const { state } = check;
    if (!state) return [];
    const said = await within(STATE_TIMEOUT_MS, Promise.resolve().then(state)).catch(() => 'no answer in time');
    return said === undefined ? [] : [[name, said] as const];
  }));
  return Object.fromEntries(told.flat());
}
