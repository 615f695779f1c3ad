/**
 * What one request has already read from, or still owes to, the durable store (issue 9: "stop
 * re-reading what a request already holds"). A memo lives exactly as long as its request, so
 * it is as exact as a read at the start of the request: the next request, on this instance or
 * another, reads again. Nothing here outlives a request; no cache is shared between requests.
 *
 * - `rows`: rows read (or known absent) by this request: a grant, a user, a client, whether a
 *   client has webhook endpoints. Writes of the same request replace or drop them.
 * - `writes`: token writes the request deferred so they go to the database in one statement
 *   (postgres-adapter.ts); they are flushed before anything else is read or the response leaves.
 *
 * @example koa.use(requestMemo(flush)); … currentMemo()?.rows.get('user:…')
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Middleware } from 'koa';

export interface RequestMemo {
  readonly rows: Map<string, unknown>;
  /** Deferred writes (`ops`, the store's own), and how to send them all at once. */
  pending: { readonly ops: unknown[]; send(): Promise<void> } | undefined;
}

const storage = new AsyncLocalStorage<RequestMemo>();

/** The memo of the request this code runs for, if any (jobs and the CLI have none). */
export function currentMemo(): RequestMemo | undefined {
  return storage.getStore();
}

/** Sends what the current request deferred, if anything. */
export async function flushPending(): Promise<void> {
  const memo = storage.getStore();
  const pending = memo?.pending;
  if (!pending) return;
  memo.pending = undefined;
  await pending.send();
}

/**
 * Gives each request its memo; once the handlers are done, writes still deferred are sent
 * before the response leaves (through `guard`, so a store failure is a 503 like any other).
 */
export function requestMemo(guard: <T>(work: () => Promise<T>) => Promise<T>): Middleware {
  return (ctx, next) => withRequestMemo(async () => {
    await next();
    if (!storage.getStore()?.pending) return;
    try {
      await guard(flushPending);
    } catch (error) {
      // A deferred consume that lost its race: answered as the provider answers it (400 invalid_grant).
      const refused = error as { error?: unknown; error_description?: unknown; statusCode?: unknown };
      if (typeof refused.error !== 'string' || typeof refused.statusCode !== 'number') throw error;
      ctx.status = refused.statusCode;
      ctx.body = { error: refused.error, error_description: refused.error_description };
    }
  });
}

/** Runs `work` as one request: with a fresh memo (the middleware below, and tests, use it). */
export function withRequestMemo<T>(work: () => Promise<T>): Promise<T> {
  return storage.run({ rows: new Map(), pending: undefined }, work);
}

/** Runs `work` as no request at all (another request's view of the store, in tests). */
export function outsideRequest<T>(work: () => T): T {
  return storage.exit(work);
}

/** The memoised value under `key`, or the result of `read` (remembered, absent included). */
export async function memoised<T>(key: string, read: () => Promise<T>): Promise<T> {
  const memo = storage.getStore();
  if (!memo) return read();
  if (memo.rows.has(key)) return memo.rows.get(key) as T;
  const value = await read();
  memo.rows.set(key, value);
  return value;
}

/** Remembers `value` under `key` for the rest of the request. */
export function remember(key: string, value: unknown): void {
  storage.getStore()?.rows.set(key, value);
}

/** Forgets what the request read under keys starting with `prefix` (after it wrote there). */
export function forget(prefix: string): void {
  const rows = storage.getStore()?.rows;
  if (!rows) return;
  for (const key of rows.keys()) if (key.startsWith(prefix)) rows.delete(key);
}
