/**
 * Work a provider event starts for a request. oidc-provider's events are synchronous
 * notifications, so what a listener writes (a webhook's outbox rows, an audit row) is tracked
 * here, and `settle`, mounted in front of the provider, holds the response until it is done: a
 * client never sees a response whose record could still be lost. A failure is logged, with the
 * request's context (its request id, as on its access line); the response stands.
 *
 * @example const work = eventWork(log); provider.on('grant.revoked', (ctx) => work.track(ctx, () => write(ctx))); koa.use(work.settle);
 */
import type http from 'node:http';
import type { Context, Middleware } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';

export interface EventWork {
  /** Starts `work`; the response of `ctx`'s request (if any) waits for it. */
  track(ctx: KoaContextWithOIDC | undefined, work: () => Promise<void>): void;
  settle: Middleware;
}

/** Receives a failed work's error, and the request that started it, if any. */
export type EventWorkLog = (error: unknown, ctx?: Context) => void;

export function eventWork(log: EventWorkLog): EventWork {
  const pending = new WeakMap<http.IncomingMessage, Promise<void>[]>();
  return {
    track(ctx, work) {
      const promise = work().catch((error) => { log(error, ctx); });
      if (!ctx) return;
      const list = pending.get(ctx.req) ?? [];
      list.push(promise);
      pending.set(ctx.req, list);
    },
    async settle(ctx, next) {
      await next();
      const list = pending.get(ctx.req);
      if (list) {
        pending.delete(ctx.req);
        await Promise.all(list);
      }
    },
  };
}

/**
 * Why the provider revoked a grant, outside the revocation endpoint: at the token endpoint a
 * second redemption of a code (RFC 6749 §4.1.2) or reuse of a rotated refresh token (RFC 9700
 * §4.14.2); anywhere else, a revocation it reports without saying why.
 */
export function grantRevocationReason(ctx: KoaContextWithOIDC): 'code_replay' | 'refresh_token_reuse' | 'grant_revoked' {
  const grantType = ctx.oidc.params?.grant_type;
  return grantType === 'authorization_code' ? 'code_replay' : grantType === 'refresh_token' ? 'refresh_token_reuse' : 'grant_revoked';
}
