/**
 * `GET /healthz`: 200 when every dependency answers, 503 naming the ones that do not.
 * For load balancers and docker-compose healthchecks.
 */
import type { Middleware } from 'koa';

export const HEALTH_PATH = '/healthz';

export function health(checks: Record<string, () => Promise<unknown>>): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== HEALTH_PATH || ctx.method !== 'GET') return next();
    const results = await Promise.allSettled(Object.values(checks).map((check) => check()));
    const failing = Object.keys(checks).filter((_, i) => results[i]!.status === 'rejected');
    ctx.set('Cache-Control', 'no-store');
    ctx.status = failing.length === 0 ? 200 : 503;
    ctx.body = failing.length === 0 ? { status: 'ok' } : { status: 'unavailable', failing };
  };
}
