/**
 * A request's writes, sent as one statement (issue 9: "merge find + consume into one conditional
 * statement, write the access and refresh tokens (and any outbox row) in one round trip").
 *
 * Two kinds of parts join a batch as the provider and the app make their changes:
 * - a **gate**: a conditional `UPDATE … RETURNING 1` (a code or refresh token consumed only if
 *   nobody consumed it first). It *took* when it returned a row.
 * - a **write**: an `INSERT … SELECT … WHERE <ok>` (tokens, outbox messages, audit rows), where
 *   `<ok>` holds exactly when every gate of its batch took.
 *
 * They go out as data-modifying CTEs of one statement, which PostgreSQL runs in one snapshot and
 * one transaction: either every gate took and everything is written, or nothing is and the
 * first refused gate's error is thrown (RFC 6749 §4.1.2: a code is used at most once, and a
 * redemption that lost the race leaves no token, no event and no audit row behind).
 *
 * {@link sendTogether} sends the batches of requests that flush in the same event-loop turn in
 * one statement too (each batch gated by its own consumes only), as the hot reads are batched
 * (turn-batch.ts): on a loaded server one write round trip then serves several requests.
 *
 * @example const batch = new WriteBatch(); batch.gate(consume); batch.write('outbox:evt_1', message); await sendTogether(sql, batch);
 */
import { isStoreFailure } from './store-failure.js';
import type { HotSql } from './sql.js';
import { turnBatch } from './turn-batch.js';

/** Adds a statement parameter and answers its placeholder (`$n`). */
export type Placeholder = (value: unknown) => string;

export interface Gate {
  /** The row it updates (`<table>:<key>`): batches that update one row never share a statement. */
  readonly row: string;
  /** A conditional `UPDATE … RETURNING 1`. */
  sql(p: Placeholder): string;
  /** Why the request fails when it did not take (another request got there first). */
  refused(): Error;
}

export interface Write {
  /** Existing rows it may update (an upsert's keys, as {@link Gate.row}); none for plain inserts. */
  rows?(): Iterable<string>;
  /** A data-modifying statement that writes only where `ok` (an SQL condition) holds, `RETURNING` a row per row written. */
  sql(p: Placeholder, ok: string): string;
  /** Called once the statement with this write in it has committed, with the rows it wrote. */
  written?(rows: number): void;
}

type Row = Record<string, boolean | number>;

export class WriteBatch {
  readonly #gates: Gate[] = [];
  readonly #writes = new Map<string, Write>();

  gate(gate: Gate): void {
    this.#gates.push(gate);
  }

  /** Adds `write` under `key`; a later write under the same key replaces it (keeping its place). */
  write(key: string, write: Write): void {
    this.#writes.set(key, write);
  }

  /** The write under `key`, for a part that accumulates (several rows in one INSERT). */
  get(key: string): Write | undefined {
    return this.#writes.get(key);
  }

  get empty(): boolean {
    return this.#gates.length === 0 && this.#writes.size === 0;
  }

  /** The existing rows this batch may update. */
  rows(): Set<string> {
    return new Set([...this.#gates.map((gate) => gate.row), ...[...this.#writes.values()].flatMap((write) => [...write.rows?.() ?? []])]);
  }

  /**
   * This batch's CTEs and result columns, named with `prefix`: gates `<prefix>g0…` (whether each
   * took) and writes `<prefix>w0…` (how many rows each wrote).
   */
  parts(p: Placeholder, prefix = ''): { ctes: string[]; columns: string[] } {
    const took = this.#gates.map((_, i) => `EXISTS (SELECT 1 FROM ${prefix}g${i})`);
    const ok = took.length ? took.join(' AND ') : 'true';
    return {
      ctes: [
        ...this.#gates.map((gate, i) => `${prefix}g${i} AS (${gate.sql(p)})`),
        ...[...this.#writes.values()].map((write, i) => `${prefix}w${i} AS (${write.sql(p, ok)})`),
      ],
      columns: [
        ...took.map((exists, i) => `${exists} AS ${prefix}g${i}`),
        ...[...this.#writes.keys()].map((_, i) => `(SELECT count(*) FROM ${prefix}w${i})::int AS ${prefix}w${i}`),
      ],
    };
  }

  /** The statement of this batch alone. */
  statement(): { text: string; params: unknown[] } {
    return statementOf([this]);
  }

  /** Reads this batch's columns of a result: throws the `refused()` of a gate that did not take, or tells each write what it wrote. */
  settle(row: Row, prefix = ''): void {
    const refused = this.#gates.find((_, i) => row[`${prefix}g${i}`] !== true);
    if (refused) throw refused.refused();
    [...this.#writes.values()].forEach((write, i) => write.written?.(Number(row[`${prefix}w${i}`] ?? 0)));
  }

  /** Sends this batch alone (a prepared statement: a batch has few shapes). */
  async send(sql: HotSql): Promise<void> {
    if (this.empty) return;
    const { text, params } = this.statement();
    const [row = {}] = await sql<Row>(text, params);
    this.settle(row);
  }
}

const prefixOf = (batches: WriteBatch[], i: number) => (batches.length === 1 ? '' : `b${i}_`);

function statementOf(batches: WriteBatch[]): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  const p: Placeholder = (value) => `$${params.push(value)}`;
  const parts = batches.map((batch, i) => batch.parts(p, prefixOf(batches, i)));
  return { text: `WITH ${parts.flatMap((part) => part.ctes).join(', ')} SELECT ${parts.flatMap((part) => part.columns).join(', ')}`, params };
}

/** Batches a statement may carry at most (each a few dozen parameters: far below PostgreSQL's 65,535). */
const MAX_TOGETHER = 64;

/** The turn's batches in statements: none of a statement's batches updates a row another one does. */
function statementsFor(batches: WriteBatch[]): WriteBatch[][] {
  const statements: { batches: WriteBatch[]; rows: Set<string> }[] = [];
  for (const batch of batches) {
    const rows = batch.rows();
    const free = statements.find((s) => s.batches.length < MAX_TOGETHER && ![...rows].some((row) => s.rows.has(row)));
    if (free) {
      free.batches.push(batch);
      for (const row of rows) free.rows.add(row);
    } else {
      statements.push({ batches: [batch], rows });
    }
  }
  return statements.map((s) => s.batches);
}

/** Settles each batch from `row`, each with its own outcome. */
const outcomes = (batches: WriteBatch[], row: Row) => batches.map((batch, i): [unknown, undefined] => {
  try {
    batch.settle(row, prefixOf(batches, i));
    return [null, undefined];
  } catch (error) {
    return [error, undefined];
  }
});

async function sendStatement(sql: HotSql, batches: WriteBatch[]): Promise<[unknown, undefined][]> {
  if (batches.length === 1) {
    try {
      await batches[0]!.send(sql);
      return [[null, undefined]];
    } catch (error) {
      return [[error, undefined]];
    }
  }
  const { text, params } = statementOf(batches);
  try {
    const [row = {}] = await sql<Row>(text, params, { prepare: false }); // shapes vary: not worth preparing
    return outcomes(batches, row);
  } catch (error) {
    if (isStoreFailure(error)) return batches.map(() => [error, undefined]);
    // Rolled back whole (one batch's bad data, a deadlock with another instance): each alone.
    const alone: [unknown, undefined][] = [];
    for (const batch of batches) alone.push(...await sendStatement(sql, [batch]));
    return alone;
  }
}

const senders = new WeakMap<HotSql, (batch: WriteBatch) => Promise<void>>();

/**
 * Sends `batch` with the other batches flushed in this event-loop turn: together in one statement
 * where they update no row in common, each with its own outcome (its refused gate fails it alone).
 */
export function sendTogether(sql: HotSql, batch: WriteBatch): Promise<void> {
  let send = senders.get(sql);
  if (!send) {
    send = turnBatch<WriteBatch, undefined>(async (batches) => {
      const results = await Promise.all(statementsFor(batches).map((group) => sendStatement(sql, group).then((r) => ({ group, r }))));
      const byBatch = new Map<WriteBatch, [unknown, undefined]>();
      for (const { group, r } of results) group.forEach((b, i) => byBatch.set(b, r[i]!));
      return batches.map((b) => byBatch.get(b)!);
    });
    senders.set(sql, send);
  }
  return batch.empty ? Promise.resolve() : send(batch);
}
