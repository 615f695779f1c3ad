/**
 * Sends deferred writes (store/request-state.ts `Writes`) as the one statement `WRITE`
 * (store/statements.ts): each request's writes alone, or (`byTurn`) together with those of the
 * other requests that send theirs in the same turn of the event loop, in one statement where
 * they update no row in common. Batching pays where a round trip costs more than the work it
 * carries (embedded PGlite serves one statement at a time); app.ts chooses.
 *
 * A sender resolves once the writes committed and their `committed` callbacks ran, or rejects
 * with the error of a consume that did not take (the writes were then not made at all), or with
 * the store's failure (`WriteSender`, store/request-state.ts).
 *
 * A shared statement that fails (one request's data, or a deadlock with another statement) is
 * sent again request by request; `retried` is told each time, with the error's SQLSTATE
 * (`40P01` for a deadlock), so the retries can be counted (`oauth_store_write_retries_total`).
 *
 * @example const send = createWriteSender(db.sql, { byTurn: true, retried: metrics.writeRetried }); await send(writes);
 */
import DataLoader from 'dataloader';
import { isStoreFailure } from './store-failure.js';
import type { HotSql } from './sql.js';
import type { Writes, WriteSender } from './request-state.js';
import { WRITE } from './statements.js';

export type { WriteSender };

/** Batches one statement may carry at most. */
const MAX_TOGETHER = 64;

/** The statement's parameters for `batches`, in the order of `WRITE`'s table. */
export function writeParameters(batches: readonly Writes[]): unknown[] {
  const columns = (count: number) => Array.from({ length: count }, (): unknown[] => []);
  const [consumes, models, audit, events, used] = [columns(3), columns(8), columns(8), columns(8), columns(2)] as unknown[][][];
  const push = (into: unknown[][], values: unknown[]) => values.forEach((value, i) => into[i]!.push(value));
  batches.forEach((writes, b) => {
    for (const c of writes.consumes) push(consumes!, [b, c.type, c.id]);
    for (const m of writes.models.values()) push(models!, [b, m.type, m.id, m.payload, m.grantId, m.uid, m.userCode, m.expiresAt]);
    for (const a of writes.audit) push(audit!, [b, a.event, a.actor, a.user_id, a.client_id, a.address, a.request_id, JSON.stringify(a.detail)]);
    for (const e of writes.events) push(events!, [b, e.eventId, e.type, e.payload, e.clientId, e.accountId, e.messageIds, e.at]);
    for (const clientId of writes.clientsUsed) push(used!, [b, clientId]);
  });
  return [batches.length, ...consumes!, ...models!, ...audit!, ...events!, ...used!];
}

/** Runs the statement for `batches` with `query`: which consumes took (1-based), and which events got a message. */
async function run(query: HotSql, batches: readonly Writes[]): Promise<{ took: Set<number>; announced: Set<string> }> {
  const { rows: [row] } = await query<{ took: number[]; announced: string[] }>({ ...WRITE, values: writeParameters(batches) });
  return { took: new Set((row?.took ?? []).map(Number)), announced: new Set(row?.announced ?? []) };
}

/** The consume of `writes` that did not take, if any (`first`: the place of its first consume in the statement). */
const refusedIn = (writes: Writes, first: number, took: ReadonlySet<number>) => writes.consumes.find((_, i) => !took.has(first + i));

/** Each batch's outcome: the error of its first consume that did not take, or undefined once its callbacks ran. */
async function sendStatement(sql: HotSql, batches: readonly Writes[]): Promise<(Error | undefined)[]> {
  const { took, announced } = await run(sql, batches);
  let first = 1;
  return batches.map((writes) => {
    const refused = refusedIn(writes, first, took);
    first += writes.consumes.length;
    if (refused) return refused.refused();
    for (const done of writes.committed) done(announced);
    return undefined;
  });
}

/**
 * `writes` as one statement of an open transaction (`query` runs in it): answers the events that
 * got a message; the `committed` callbacks are the caller's to run once the transaction committed.
 */
export async function writeInTransaction(query: HotSql, writes: Writes): Promise<Set<string>> {
  const { took, announced } = await run(query, [writes]);
  const refused = refusedIn(writes, 1, took);
  if (refused) throw refused.refused();
  return announced;
}

/** `batches` in statements: none of a statement's batches updates a row another one does. */
function statementsFor(batches: readonly Writes[]): Writes[][] {
  const statements: { batches: Writes[]; rows: Set<string> }[] = [];
  for (const writes of batches) {
    const rows = writes.rows();
    const free = statements.find((s) => s.batches.length < MAX_TOGETHER && ![...rows].some((row) => s.rows.has(row)));
    if (free) {
      free.batches.push(writes);
      for (const row of rows) free.rows.add(row);
    } else {
      statements.push({ batches: [writes], rows });
    }
  }
  return statements.map((s) => s.batches);
}

/** What a failed statement's error says of its cause: its SQLSTATE, or `other`. */
export const sqlState = (error: unknown): string => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : 'other';
};

/** One statement for `batches`; one that fails on one batch's data (or a deadlock) is retried batch by batch. */
async function sendTogether(sql: HotSql, batches: readonly Writes[], retried: Retried): Promise<(Error | undefined)[]> {
  try {
    return await sendStatement(sql, batches);
  } catch (error) {
    if (batches.length === 1 || isStoreFailure(error)) return batches.map(() => error as Error);
    retried(sqlState(error));
    const alone: (Error | undefined)[] = [];
    for (const writes of batches) alone.push(...await sendTogether(sql, [writes], retried));
    return alone;
  }
}

/** Told when a statement carrying several requests' writes failed and goes again one request at a time: the SQLSTATE of its error. */
export type Retried = (code: string) => void;

export interface WriteSenderOptions {
  /** The writes of one event-loop turn's requests together (DATABASE_BATCHING=turn), or each request's alone. */
  readonly byTurn: boolean;
  readonly retried?: Retried;
}

export function createWriteSender(sql: HotSql, { byTurn, retried = () => {} }: WriteSenderOptions): WriteSender {
  const raise = (outcome: Error | undefined) => { if (outcome) throw outcome; };
  if (!byTurn) return async (writes) => raise((await sendStatement(sql, [writes]))[0]);
  const turn = new DataLoader<Writes, true>(async (batches) => {
    const groups = statementsFor(batches);
    const outcomes = new Map<Writes, Error | undefined>();
    await Promise.all(groups.map(async (group) => {
      (await sendTogether(sql, group, retried)).forEach((outcome, i) => outcomes.set(group[i]!, outcome));
    }));
    return batches.map((writes) => outcomes.get(writes) ?? true);
  }, { cache: false, batchScheduleFn: (dispatch) => setImmediate(dispatch) });
  return async (writes) => { await turn.load(writes); };
}
