/**
 * What one request has already read from, or still owes to, the durable store (issue 9: "stop
 * re-reading what a request already holds"). A memo lives exactly as long as its request, so
 * it is as exact as a read at the start of the request: the next request, on this instance or
 * another, reads again. Nothing here outlives a request; no cache is shared between requests.
 *
 * - `rows`: rows read (or known absent) by this request: a grant, a user, a client, whether a
 *   client has webhook endpoints, a session or an interaction as Redis answered it. Writes of
 *   the same request replace or drop them.
 * - `pending`: the writes the request deferred (tokens, their consume, outbox messages), sent as
 *   one statement (store/write-batch.ts) before anything else is read or the response leaves.
 *
 * @example koa.use(requestMemo(guard)); … currentMemo()?.rows.get('user:…')
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context, Middleware } from 'koa';
import type { HotSql } from './sql.js';
import { sendTogether, WriteBatch } from './write-batch.js';

export interface RequestMemo {
  readonly rows: Map<string, unknown>;
  /** The writes deferred so far, and the driver they go to. */
  pending: { readonly batch: WriteBatch; readonly sql: HotSql } | undefined;
}

/** A model instance the request will look up after its client (a token request's code or refresh token). */
export interface LookAhead {
  readonly type: string;
  readonly id: string;
}

const LOOK_AHEAD = 'look-ahead';

const storage = new AsyncLocalStorage<RequestMemo>();

/** The memo of the request this code runs for, if any (jobs and the CLI have none). */
export function currentMemo(): RequestMemo | undefined {
  return storage.getStore();
}

/** The current request's deferred writes, going to `sql` (started on first use); undefined outside a request. */
export function pendingWrites(sql: HotSql): WriteBatch | undefined {
  const memo = storage.getStore();
  if (!memo) return undefined;
  memo.pending ??= { batch: new WriteBatch(), sql };
  return memo.pending.batch;
}

/**
 * Adds parts to the request's one write statement with `add`; outside a request they go in a
 * statement of their own, sent at once.
 *
 * @example await defer(sql, (batch) => batch.gate(consume));
 */
export async function defer(sql: HotSql, add: (batch: WriteBatch) => void): Promise<void> {
  const batch = pendingWrites(sql);
  if (batch) return add(batch);
  const alone = new WriteBatch();
  add(alone);
  await alone.send(sql);
}

/** Sends what the current request deferred, if anything. */
export async function flushPending(): Promise<void> {
  const memo = storage.getStore();
  const pending = memo?.pending;
  if (!pending) return;
  memo.pending = undefined;
  await sendTogether(pending.sql, pending.batch); // with the writes other requests flush in this turn
}

/**
 * What this request will look up after its client, taken (it is used once: by the first client
 * lookup). Asked then, not when the request starts: a token request's form is read on the way.
 */
export function takeLookAhead(): LookAhead | undefined {
  const rows = storage.getStore()?.rows;
  const ahead = rows?.get(LOOK_AHEAD) as (() => LookAhead | undefined) | undefined;
  rows?.delete(LOOK_AHEAD);
  return ahead?.();
}

/**
 * Gives each request its memo; once the handlers are done, writes still deferred are sent
 * before the response leaves (through `guard`, so a store failure is a 503 like any other).
 * `lookAhead` names what the request will read after its client, so both come in one statement
 * (store/hot-reads.ts).
 */
export function requestMemo(guard: <T>(work: () => Promise<T>) => Promise<T>, lookAhead?: (ctx: Context) => LookAhead | undefined): Middleware {
  return (ctx, next) => storage.run({ rows: new Map(), pending: undefined }, async () => {
    if (lookAhead) remember(LOOK_AHEAD, () => lookAhead(ctx));
    await next();
    if (storage.getStore()?.pending) await guard(flushPending);
  });
}

/**
 * Sends the writes the handlers below deferred as soon as they are done, before the response
 * goes back up: mounted in front of the provider, so that a deferred consume that lost its race
 * is answered as the provider answers a used code (400 invalid_grant), which the spec glue in
 * front of it then treats as it treats the provider's own.
 */
export function sendWrites(guard: <T>(work: () => Promise<T>) => Promise<T>): Middleware {
  return async (ctx, next) => {
    await next();
    if (!storage.getStore()?.pending) return;
    try {
      await guard(flushPending);
    } catch (error) {
      const refused = error as { error?: unknown; error_description?: unknown; statusCode?: unknown };
      if (typeof refused.error !== 'string' || typeof refused.statusCode !== 'number') throw error;
      ctx.status = refused.statusCode;
      ctx.body = { error: refused.error, error_description: refused.error_description };
    }
  };
}

/** Runs `work` as one request (tests): with a fresh memo, whose deferred writes are sent when `work` ends. */
export function withRequestMemo<T>(work: () => Promise<T>): Promise<T> {
  return storage.run({ rows: new Map(), pending: undefined }, async () => {
    const result = await work();
    await flushPending();
    return result;
  });
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
