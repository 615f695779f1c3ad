// Kept over opossum: its error-rate breaker needs a filter that reads its own state to open on a timeout only, adds event and stats work to every store call, and needs Node 22 after 9.x.
/**
 * Tells a store failure (the store is down, hung, refusing or out of connections) from any
 * other error, and turns it into the one error the wire knows, {@link StoreUnavailableError}
 * (503 `temporarily_unavailable`). A failure of our own code stays what it is (a logged 500):
 * only what the store did is classified.
 *
 * @example await unavailableOn('redis', () => redis.get(key));
 */
import { StoreUnavailableError } from '../errors.js';
import type { StoreName } from '../errors.js';

/** Socket errors of a connection that cannot be made or was lost. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/**
 * SQLSTATEs of a server that cannot serve: 08 connection exception, 53 insufficient resources,
 * 57P01–57P05 operator intervention (shutdown, cannot connect now), 57014 query_canceled
 * (statement_timeout), 25P03 idle_in_transaction_session_timeout.
 * @see https://www.postgresql.org/docs/15/errcodes-appendix.html
 */
const SQLSTATE = /^(08|53|57P0|57014$|25P03$)/;

/** Prisma driver-adapter error kinds for the same conditions (@prisma/adapter-pg). */
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);

/** Prisma's codes: can't reach, timed out, server closed the connection, pool timeout, transaction not started in time. */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);

/** Messages of node-postgres, pg-pool, ioredis, Prisma's transaction manager and rate-limiter-flexible for a store that does not answer. */
const MESSAGES = /^(no answer within|Redis connection is not ready|Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Connection is closed|Command timed out|Stream isn't writeable|Reached the max retries per request limit|Transaction API error: Unable to start a transaction in the given time|Cannot use a pool after calling end on the pool|Client was closed and is not queryable)/;

/**
 * Redis refusing to serve, in the error replies it answers instead (ioredis `ReplyError`): still
 * loading its data, busy with a script, out of memory (`maxmemory` with no eviction), a read-only
 * replica, a replica without its primary, refusing writes after a failed save, too few replicas,
 * a cluster slot moving or down. The store is there but cannot serve: 503, as when it is down.
 * @see https://redis.io/docs/latest/develop/reference/protocol-spec/#simple-errors
 */
const REDIS_REFUSALS = /^(LOADING|BUSY|OOM|READONLY|MASTERDOWN|MISCONF|NOREPLICAS|TRYAGAIN|CLUSTERDOWN)\b/;

/** What the store clients' errors (node-postgres, Prisma, ioredis) may carry; all of it unchecked. */
export interface Shape {
  name?: unknown;
  code?: unknown;
  kind?: unknown;
  originalCode?: unknown;
  message?: unknown;
  cause?: unknown;
  /** ioredis: the replies that made Redis discard a MULTI (`EXECABORT`). */
  previousErrors?: unknown;
  meta?: { driverAdapterError?: unknown };
}

function failureHere(error: Shape): boolean {
  if (typeof error.code === 'string' && (SOCKET_CODES.has(error.code) || SQLSTATE.test(error.code) || PRISMA_CODES.has(error.code))) return true;
  if (typeof error.originalCode === 'string' && SQLSTATE.test(error.originalCode)) return true;
  if (typeof error.kind === 'string' && ADAPTER_KINDS.has(error.kind)) return true;
  if (error.kind === 'postgres' && typeof error.code === 'string' && SQLSTATE.test(error.code)) return true;
  if (error.name === 'PrismaClientInitializationError' || error.name === 'MaxRetriesPerRequestError') return true;
  if (error.name === 'ReplyError' && typeof error.message === 'string' && REDIS_REFUSALS.test(error.message)) return true;
  return typeof error.message === 'string' && MESSAGES.test(error.message);
}

/** `error` and what it wraps (its `cause`, Prisma's `meta.driverAdapterError`, a discarded MULTI's replies), outermost first. */
export function* errorChain(error: unknown): Generator<Shape> {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0) {
    const next = queue.shift();
    if (typeof next !== 'object' || next === null || seen.has(next)) continue;
    seen.add(next);
    const shape = next as Shape;
    yield shape;
    queue.push(shape.cause, shape.meta?.driverAdapterError, ...(Array.isArray(shape.previousErrors) ? shape.previousErrors : []));
  }
}

/** True when `error` (or what it wraps) says a store did not answer, or refused to serve. */
export function isStoreFailure(error: unknown): boolean {
  for (const shape of errorChain(error)) if (failureHere(shape)) return true;
  return false;
}

/** The error to throw: a store failure becomes {@link StoreUnavailableError}, anything else is itself. */
export function asUnavailable(store: StoreName | undefined, error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  return isStoreFailure(error) ? new StoreUnavailableError(store, error) : error;
}

/** Runs `work`; a store failure comes out as {@link StoreUnavailableError}. */
export async function unavailableOn<T>(store: StoreName, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asUnavailable(store, error);
  }
}

/** The client gave up waiting (as opposed to a refusal or a lost connection, which fail at once). */
const TIMED_OUT = /^(Query read timeout|timeout exceeded when trying to connect|Connection terminated due to connection timeout|Command timed out|no answer within)/;

function timedOut(error: unknown): boolean {
  for (let e = error as Shape | undefined, depth = 0; e && depth < 5; e = e.cause as Shape | undefined, depth += 1) {
    if (typeof e.message === 'string' && TIMED_OUT.test(e.message)) return true;
  }
  return false;
}

/** Calls to one store, failing fast while it is seen hung. */
export type StoreGuard = <T>(work: () => Promise<T>) => Promise<T>;

/** How long a store that just timed out is not asked at all. */
export const HUNG_PAUSE_MS = 1000;

/**
 * Like {@link unavailableOn}, with a breaker for a hung store. Once a call has timed out (a hung
 * store, as opposed to a refusal or a lost connection, which fail at once anyway), calls fail at
 * once for {@link HUNG_PAUSE_MS}; after that one call at a time probes the store while the others
 * still fail at once, and the first answer closes the breaker. So a hung store costs a request
 * one timeout at most (the provider's error handler, for one, looks the client up again after a
 * failure), requests do not pile up behind it, and recovery is seen by the first probe.
 *
 * `callTimeoutMs` bounds each call from the moment it is made, for a store whose calls are one
 * round trip each (Redis): the client's own timeout starts when a command is written, and ioredis
 * writes an auto-pipeline only once the one before it has answered, so a command queued behind a
 * hung one would wait two timeouts (a request must never wait on a store longer than its
 * timeout plus a small margin).
 *
 * @example const database = storeGuard('database'); await database(() => prisma.user.findUnique(…));
 */
export function storeGuard(store: StoreName, pauseMs = HUNG_PAUSE_MS, callTimeoutMs?: number): StoreGuard {
  let hungSince: number | undefined;
  let probing = false;
  const call = <T>(work: () => Promise<T>) => (callTimeoutMs === undefined ? work() : within(callTimeoutMs, work()));

  return async (work) => {
    if (hungSince === undefined) {
      try {
        return await call(work);
      } catch (error) {
        if (timedOut(error)) hungSince = Date.now();
        throw asUnavailable(store, error);
      }
    }
    if (probing || Date.now() - hungSince < pauseMs) throw new StoreUnavailableError(store);
    probing = true;
    try {
      const result = await call(work);
      hungSince = undefined;
      return result;
    } catch (error) {
      if (isStoreFailure(error)) hungSince = Date.now();
      else hungSince = undefined; // the store answered (with an error of another kind)
      throw asUnavailable(store, error);
    } finally {
      probing = false;
    }
  };
}

/** A bound's timer later than this means the process itself was held up, not the store. */
const LATE_MS = 5;
/** The least a store is given again after such a stall. */
const STALL_GRACE_MS = 50;

/**
 * `work`, or a rejection once `ms` have passed without its answer: a wait on a store that may
 * hang, bounded (Redis calls, readiness pings, closing the pool).
 *
 * A stall of this process is not taken for a store's: a starved CPU, a long collection or a
 * large body parsed can hold the event loop past the bound, and a breaker must not open on a
 * store that answered (a fuzz test in CI saw 503s and a readiness 503 that way, Redis fine).
 * - Node runs due timers before it reads its sockets, so after a stall the timer would fire
 *   while the answer waits in the socket: the verdict waits for the check phase that follows
 *   the loop's reading of its sockets.
 * - A call made just before the stall may not even have been sent (ioredis writes from a
 *   setImmediate of its own, or behind a pipeline whose answer waits in the socket): when the
 *   timer fires `late` ms after its time, more than {@link LATE_MS}, the store gets that again
 *   (at least {@link STALL_GRACE_MS}, at most one more bound), from when the process ran again.
 * A stall of twice the bound after the command was written still reads as a timeout: the
 * client's own timer (store/redis.ts) fires then, before the socket is read.
 *
 * @example await within(1000, db.ping());
 */
export function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let verdict: NodeJS.Immediate | undefined;
  const timeout = new Promise<never>((_, reject) => {
    const judge = () => {
      verdict = setImmediate(() => reject(new Error(`no answer within ${ms} ms`)));
    };
    const due = performance.now() + ms;
    timer = setTimeout(() => {
      const late = performance.now() - due;
      if (late > LATE_MS) timer = setTimeout(judge, Math.min(Math.max(late, STALL_GRACE_MS), ms));
      else judge();
    }, ms);
  });
  return Promise.race([work, timeout]).finally(() => {
    clearTimeout(timer);
    if (verdict) clearImmediate(verdict);
  });
}
