/**
 * The spec's limits: `TOKEN_RATE_LIMIT_PER_MINUTE` (5) for token-issuing paths, per address and
 * per client_id; `RATE_LIMIT_PER_MINUTE` (60) for every other path, per address, one budget
 * across all of them. Every request counts, whatever its outcome. Health checks and the
 * stylesheet are answered before this middleware and are exempt.
 *
 * Every limited response carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`
 * (seconds); where two budgets apply, those of the one closer to exhaustion. Over a limit: 429,
 * `Retry-After` (whole seconds, at least 1) and the small JSON body `too_many_requests`, written
 * here, with no database work, hashing or rendering behind it (and no body parsing, except the
 * token form whose client_id a token request's budgets need, spent in one Redis round trip).
 *
 * The address a request comes from counts by its key (http/client-address.ts `clientKey`): IPv4
 * as is, IPv6 by its /64.
 *
 * @see ../shared/spec/oauth-service-spec.md "Limits"
 * @see https://datatracker.ietf.org/doc/html/draft-ietf-httpapi-ratelimit-headers-06 (the header trio)
 * @example app.use(rateLimit({ tokenPaths, tokenByAddress, otherByAddress }));
 */
import type { Context, Middleware } from 'koa';
import { retryAfterSeconds } from '../store/limiter.js';
import type { Limiter, Usage } from '../store/limiter.js';
import { clientKey } from './client-address.js';

export interface RateLimits {
  /** Paths that issue tokens: the token budget instead of the general one. */
  readonly tokenPaths: ReadonlySet<string>;
  readonly tokenByAddress: Limiter;
  readonly otherByAddress: Limiter;
}

interface Budget extends Usage {
  readonly limit: number;
}

/** The budget whose headers a response reports, kept for a second budget on the same request. */
const REPORTED = Symbol('rate-limit budget');

/** Fewer requests left is closer to exhaustion; at a tie, the later reset. */
function closer(a: Budget, b: Budget | undefined): Budget {
  if (!b) return a;
  if (a.remaining !== b.remaining) return a.remaining < b.remaining ? a : b;
  return a.resetMs >= b.resetMs ? a : b;
}

/** Sets the headers of the budget closer to exhaustion; answers 429 and returns false when over. */
function admit(ctx: Context, budget: Budget): boolean {
  const state = ctx.state as { [REPORTED]?: Budget };
  const reported = closer(budget, state[REPORTED]);
  state[REPORTED] = reported;
  ctx.set({
    'RateLimit-Limit': String(reported.limit),
    'RateLimit-Remaining': String(reported.remaining),
    'RateLimit-Reset': String(Math.ceil(reported.resetMs / 1000)),
  });
  if (!budget.exceeded) return true;
  // `reported` is spent too (remaining 0); at a tie it is the one that resets later.
  const retryAfter = retryAfterSeconds(reported.resetMs);
  ctx.set({ 'Retry-After': String(retryAfter), 'RateLimit-Reset': String(retryAfter), 'Cache-Control': 'no-store' });
  ctx.status = 429;
  ctx.body = {
    error: 'too_many_requests',
    error_description: `more than ${budget.limit} requests in a minute; retry in ${retryAfter} s`,
  };
  return false;
}

async function take(limiter: Limiter, key: string): Promise<Budget> {
  const { consumed, remaining, resetMs, exceeded } = await limiter.consume(key);
  return { consumed, remaining, resetMs, exceeded, limit: limiter.points }; // a 429 flood's path: no spread
}

/** A token request whose address budget waits for its client_id (see {@link tokenAdmission}). */
const DEFERRED = Symbol('address budget deferred to the client_id');

type Deferred = { [DEFERRED]?: Limiter };

/**
 * Counts every request against its address's budget; answers 429 itself when it is spent.
 * A token request (a POST with a form body) is the exception: its address budget is spent with
 * its client_id's, in one Redis round trip, by {@link tokenAdmission} once the form is read
 * (before any lookup or secret check). One that fails before it gets there (a form over the
 * body limit, a body cut off) spends it then, with the headers, and gets the 429 when that
 * budget is spent.
 */
export function rateLimit(limits: RateLimits): Middleware {
  return async (ctx, next) => {
    const address = clientKey(ctx);
    // An address already refused until its window ends is refused below at once, without
    // reading its form or asking the store (store/limiter.ts `holdRefusals`).
    if (limits.tokenPaths.has(ctx.path) && ctx.method === 'POST' && !limits.tokenByAddress.refusedHere(address)
      && ctx.is('application/x-www-form-urlencoded')) {
      const state = ctx.state as Deferred;
      state[DEFERRED] = limits.tokenByAddress;
      try {
        await next();
      } catch (error) {
        // Failed before its form named a client (a body over the limit, cut off): its address
        // budget is spent here, and a spent one answers 429 as it would have before the form.
        if (state[DEFERRED]) {
          state[DEFERRED] = undefined;
          if (!admit(ctx, await take(limits.tokenByAddress, address))) return;
        }
        throw error;
      } finally {
        if (state[DEFERRED]) {
          state[DEFERRED] = undefined;
          await limits.tokenByAddress.consume(address);
        }
      }
      return;
    }
    const limiter = limits.tokenPaths.has(ctx.path) ? limits.tokenByAddress : limits.otherByAddress;
    if (!admit(ctx, await take(limiter, address))) return;
    await next();
  };
}

/**
 * The token request's budgets, for the code that reads its client_id (Basic or body): the
 * address budget {@link rateLimit} deferred and, when there is a client_id, its own. Spent at
 * together (the Redis client pipelines the commands of one event-loop turn, store/redis.ts); a
 * request refused at its address gets its client's point back.
 * True to go on, false when it has answered 429.
 */
export type ClientAdmission = (ctx: Context, clientId: string | undefined) => Promise<boolean>;

export function tokenAdmission(tokenByClient: Limiter): ClientAdmission {
  return async (ctx, clientId) => {
    const state = ctx.state as Deferred;
    const byAddress = state[DEFERRED];
    state[DEFERRED] = undefined;
    const [address, client] = await Promise.all([
      byAddress ? take(byAddress, clientKey(ctx)) : undefined,
      clientId === undefined ? undefined : take(tokenByClient, clientId),
    ]);
    if (address && !admit(ctx, address)) {
      // Refused at the address: that spends nothing of the client's budget (a second round trip,
      // on refusals only).
      if (clientId !== undefined) await tokenByClient.reward(clientId);
      return false;
    }
    return !client || admit(ctx, client);
  };
}
