/**
 * What one request has read from the durable store, and the writes it still owes. A state lives
 * exactly as long as its request, so what it remembers is as exact as a read at the start of
 * the request: the next request, here or on another instance, reads again.
 *
 * Writes are deferred and sent as one statement (store/statements.ts `WRITE`): a consume is a
 * condition of that statement, not a write of its own, so a code exchange costs one read and one
 * write, and a redemption that lost its race writes nothing at all. The statement goes out before
 * anything else is read (`flush`, called by every read of the adapters) and before the response
 * leaves; what a write makes true (an audit line, a metric, a webhook worker woken) runs only once
 * it committed (`Writes.committed`).
 *
 * What the request's envelope learns before this state begins (its id, its client's address, the
 * client it is about) is Koa's `ctx.state`, typed once here too ({@link RequestFacts}), so no file
 * reads another's value through a cast.
 *
 * @example koa.use(requestState(guard, send)); … currentState()?.writes.consumes.push(…)
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context, Middleware } from 'koa';
import { StoreUnavailableError } from '../errors.js';
import type { Client, ResourceServer, User } from '../generated/prisma/client.js';
import type { StoreGuard } from './store-failure.js';

/**
 * What the envelope's middleware learn of a request, for those after them: Koa's `ctx.state`,
 * each field written by one file and read through this type.
 */
export interface RequestFacts {
  /** The request's id: its access line's `request_id` and its audit rows' (http/access-log.ts). */
  requestId?: string;
  /** The client the request is about where the provider does not know it (http/access-log.ts `noteClient`). */
  clientId?: string;
  /** The client's address, and the key the limits count it by, worked out once (http/client-address.ts). */
  clientAddress?: string;
  clientKey?: string;
  /** The client the webhooks API authenticated before reading the body (ui/webhooks-api.ts). */
  webhooksClient?: Client;
}

declare module 'koa' {
  // Koa's own way to type `ctx.state` for every middleware.
  interface DefaultState extends RequestFacts {}
}

/** A provider model's row as the hot reads answer it (times as epoch numbers). */
export interface ModelRow {
  payload: Record<string, unknown> & { grantId?: string; accountId?: string; clientId?: string; uid?: string; userCode?: string };
  expires_ms: number | null;
  consumed_s: number | null;
}

/** A consume: taken only while the instance is unconsumed and unexpired. */
export interface Consume {
  readonly type: string;
  readonly id: string;
  /** The error of the request whose consume did not take (another request got there first). */
  refused(): Error;
}

export interface ModelWrite {
  readonly type: string;
  readonly id: string;
  /** The payload as JSON. */
  readonly payload: string;
  readonly grantId: string | null;
  readonly uid: string | null;
  readonly userCode: string | null;
  /** ISO time, or null for no expiry. */
  readonly expiresAt: string | null;
}

/** An audit_events row, by column. */
export interface AuditValues {
  event: string;
  actor: string;
  user_id: string | null;
  client_id: string | null;
  address: string | null;
  request_id: string | null;
  detail: Record<string, unknown>;
}

/** A webhook event: one outbox message for each subscribed endpoint of its client. */
export interface OutboxEvent {
  readonly eventId: string;
  readonly type: string;
  /** The event as JSON, without `username` (the statement adds it from `accountId`). */
  readonly payload: string;
  readonly clientId: string;
  readonly accountId: string | null;
  /** Message ids, comma-separated, one for each endpoint the client may have. */
  readonly messageIds: string;
  /** ISO time: the messages' creation and first attempt. */
  readonly at: string;
}

/**
 * Sends writes as one statement (store/write-sender.ts): resolves once they committed and their
 * `committed` callbacks ran; rejects with the error of a consume that did not take, or the store's.
 */
export type WriteSender = (writes: Writes) => Promise<void>;

/** One request's deferred writes (or a change's, sent on its own). */
export class Writes {
  readonly consumes: Consume[] = [];
  /** Upserts of provider models, the last of an instance winning. */
  readonly models = new Map<string, ModelWrite>();
  readonly audit: AuditValues[] = [];
  readonly events: OutboxEvent[] = [];
  /** Self-registered clients whose last use these writes record (clients/client-usage.ts). */
  readonly clientsUsed: string[] = [];
  /** Run once these writes committed, with the ids of the events that got a message. */
  readonly committed: ((announced: ReadonlySet<string>) => void)[] = [];

  get empty(): boolean {
    return this.consumes.length === 0 && this.models.size === 0 && this.audit.length === 0 && this.events.length === 0 && this.clientsUsed.length === 0;
  }

  /** The existing rows these writes update: writes that share one never go in one statement. */
  rows(): Set<string> {
    return new Set([...this.consumes.map(({ type, id }) => modelKey(type, id)), ...this.models.keys(), ...this.clientsUsed.map((id) => `clients\0${id}`)]);
  }
}

export const modelKey = (type: string, id: string) => `${type}\0${id}`;

/** The login session a request carries, as far as its client lookup reads it. */
export interface CarriedSession {
  uid?: unknown;
  accountId?: unknown;
  authorizations?: Record<string, { grantId?: unknown }>;
}

/** The code or refresh token a token request names. */
export interface LookAhead {
  readonly type: 'AuthorizationCode' | 'RefreshToken';
  readonly id: string;
}

export class RequestState {
  /** Provider models read (null: known absent), by {@link modelKey}. */
  readonly models = new Map<string, ModelRow | null>();
  readonly users = new Map<string, User | null>();
  readonly clients = new Map<string, Client | null>();
  /** Declared resource servers read (undefined: none), by their URI without a trailing slash. */
  readonly resourceServers = new Map<string, ResourceServer | undefined>();
  /** Whether a client has an enabled webhook endpoint, read with the client (store/hot-reads.ts); audit/records.ts writes no event for one without. */
  readonly clientHasWebhooks = new Map<string, boolean>();
  /** What Redis answered for a key (an instance's fields, the id an index names). */
  readonly redis = new Map<string, unknown>();
  /** The login session the request carries (oidc/adapter.ts): the client read also brings its user, its grant and its record of the client (store/hot-reads.ts). */
  session: CarriedSession | undefined;
  /** What a token request looks up once its client is known (oidc/token-endpoint.ts): read together with the client (store/hot-reads.ts). */
  lookAhead: LookAhead | undefined;
  writes = new Writes();

  constructor(readonly send: WriteSender) {}

  /** Sends the deferred writes now; throws the refused consume's error. */
  async flush(): Promise<void> {
    if (this.writes.empty && this.writes.committed.length === 0) return;
    const writes = this.writes;
    this.writes = new Writes();
    await this.send(writes);
  }

  /** Forgets the reads of models of `type` (all of them, or one id) after this request wrote there. */
  forgetModels(type: string, id?: string): void {
    if (id !== undefined) {
      this.models.delete(modelKey(type, id));
      return;
    }
    for (const key of this.models.keys()) if (key.startsWith(`${type}\0`)) this.models.delete(key);
  }

  /** Forgets what Redis answered under keys starting with `prefix`. */
  forgetRedis(prefix: string): void {
    for (const key of this.redis.keys()) if (key.startsWith(prefix)) this.redis.delete(key);
  }
}

const storage = new AsyncLocalStorage<RequestState>();

/** The state of the request this code runs for; undefined in jobs, the CLI, and outside requests. */
export function currentState(): RequestState | undefined {
  return storage.getStore();
}

/** `read` memoised in `map` under `key` for the current request (absent included); uncached outside one. */
export async function memoised<K, V>(map: (state: RequestState) => Map<K, V>, key: K, read: () => Promise<V>): Promise<V> {
  const state = storage.getStore();
  if (!state) return read();
  const known = map(state);
  if (known.has(key)) return known.get(key) as V;
  const value = await read();
  known.set(key, value);
  return value;
}

/**
 * Sends the current request's deferred writes, through `guard` (a store failure is a 503 like any
 * other). After an error answer what is left is only the record of what happened (an audit row,
 * a webhook event of a revoked grant): if it cannot be written, that is logged and the answer
 * stands; otherwise the failure fails the request, whose change was not made.
 */
export async function settle(ctx: Context, guard: StoreGuard, log: (error: unknown, ctx: Context) => void): Promise<void> {
  const state = storage.getStore();
  if (!state) return;
  try {
    await guard(() => state.flush());
  } catch (error) {
    if (ctx.status < 400 || error instanceof StoreUnavailableError) throw error;
    log(error, ctx);
  }
}

/** Gives each request its state; once the handlers are done, writes still deferred are settled before the response leaves. */
export function requestState(guard: StoreGuard, send: WriteSender, log: (error: unknown, ctx: Context) => void): Middleware {
  return (ctx, next) => storage.run(new RequestState(send), async () => {
    await next();
    await settle(ctx, guard, log);
  });
}

/** Runs `work` as one request (tests, jobs): a fresh state, whose writes are sent when `work` ends. */
export function withRequestState<T>(send: WriteSender, work: () => Promise<T>): Promise<T> {
  const state = new RequestState(send);
  return storage.run(state, async () => {
    const result = await work();
    await state.flush();
    return result;
  });
}

/** Runs `work` as no request at all (another request's view of the store). */
export function outsideRequest<T>(work: () => T): T {
  return storage.exit(work);
}
