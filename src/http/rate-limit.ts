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
 * Which budget a path spends is its row's in the route table (http/route-table.ts). A token
 * path's own methods (the token endpoint's POST) spend theirs in the route, address and client
 * together, once its form is read ({@link tokenBudgets}); this middleware counts every other
 * request.
 *
 * The address a request comes from counts by its key (http/client-address.ts `clientKey`): IPv4
 * as is, IPv6 by its /64.
 *
 * @see ../shared/spec/oauth-service-spec.md "Limits"
 * @see https://datatracker.ietf.org/doc/html/draft-ietf-httpapi-ratelimit-headers-06 (the header trio)
 * @example app.use(rateLimit({ tokenRoutes, tokenByAddress, otherByAddress }));
 */
import type { Context, Middleware } from 'koa';
import { retryAfterSeconds } from '../store/limiter.js';
import type { Limiter, Usage } from '../store/limiter.js';
import { clientKey } from './client-address.js';

export interface RateLimits {
  /** Token paths (the token budget instead of the general one) and the methods their route budgets itself. */
  readonly tokenRoutes: ReadonlyMap<string, readonly string[]>;
  readonly tokenByAddress: Limiter;
  readonly otherByAddress: Limiter;
}

/** A budget as spent, with its limit. */
export interface Budget extends Usage {
  readonly limit: number;
}

/** Fewer requests left is closer to exhaustion; at a tie, the later reset. */
function closer(a: Budget, b: Budget | undefined): Budget {
  if (!b) return a;
  if (a.remaining !== b.remaining) return a.remaining < b.remaining ? a : b;
  return a.resetMs >= b.resetMs ? a : b;
}

/**
 * Sets the headers of `reported` (of the budgets a request spent, the one closer to exhaustion);
 * answers 429 and returns false when `budget` is over.
 */
function admit(ctx: Context, budget: Budget, reported: Budget = budget): boolean {
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

/**
 * Counts every request against its address's budget; answers 429 itself when it is spent.
 * A token path's own methods are left to its route ({@link tokenBudgets}).
 */
export function rateLimit(limits: RateLimits): Middleware {
  return async (ctx, next) => {
    const token = limits.tokenRoutes.get(ctx.path);
    if (token?.includes(ctx.method)) return next();
    if (!admit(ctx, await take(token ? limits.tokenByAddress : limits.otherByAddress, clientKey(ctx)))) return;
    await next();
  };
}

/**
 * A token request's budgets, spent by its route (oidc/token-endpoint.ts): the address's and, once
 * the form names one, the client_id's, together (the Redis client pipelines the commands of one
 * event-loop turn, store/redis.ts). Each answers 429 itself and returns false when a budget is
 * spent.
 */
export interface TokenBudgets {
  /** Whether the address is refused until its window ends (no store round trip): then it is told before its form is read. */
  refusedHere(ctx: Context): boolean;
  /** The address's budget alone (a body that is no form, or cannot be read, or a refused address): what it spent, or false. */
  address(ctx: Context): Promise<Budget | false>;
  /**
   * The address's budget (unless `spent` already) and the client's, when there is a client_id.
   * A request refused at its address gets its client's point back.
   */
  withClient(ctx: Context, clientId: string | undefined, spent?: Budget): Promise<boolean>;
}

export function tokenBudgets({ byAddress, byClient }: { byAddress: Limiter; byClient: Limiter }): TokenBudgets {
  return {
    refusedHere: (ctx) => byAddress.refusedHere(clientKey(ctx)) !== undefined,
    async address(ctx) {
      const budget = await take(byAddress, clientKey(ctx));
      return admit(ctx, budget) && budget;
    },
    async withClient(ctx, clientId, spent) {
      const [address, client] = await Promise.all([
        spent ? undefined : take(byAddress, clientKey(ctx)),
        clientId === undefined ? undefined : take(byClient, clientId),
      ]);
      if (address && !admit(ctx, address)) {
        // Refused at the address: that spends nothing of the client's budget (a second round trip,
        // on refusals only).
        if (clientId !== undefined) await byClient.reward(clientId);
        return false;
      }
      return !client || admit(ctx, client, closer(client, address ?? spent));
    },
  };
}
