/**
 * A request's writes, sent as one statement (issue 9: "merge find + consume into one conditional
 * statement, write the access and refresh tokens (and any outbox row) in one round trip").
 *
 * Two kinds of parts join a batch as the provider and the app make their changes:
 * - a **gate**: a conditional `UPDATE … RETURNING` (a code or refresh token consumed only if
 *   nobody consumed it first). It *took* when it returned its row.
 * - a **write**: an `INSERT … SELECT … WHERE <ok>` (tokens, outbox messages, audit rows), where
 *   `<ok>` holds exactly when every gate of its batch took.
 *
 * They go out as data-modifying CTEs of one statement, which PostgreSQL runs in one snapshot and
 * one transaction: either every gate took and everything is written, or no write is and the
 * first refused gate's error is thrown (RFC 6749 §4.1.2: a code is used at most once, and a
 * redemption that lost the race leaves no token, no event and no audit row behind). Gates do not
 * wait on each other: one that took stays taken (a request consumes one code or refresh token).
 *
 * {@link sendTogether} sends the batches of requests that flush in the same event-loop turn in
 * one statement too (each batch gated by its own consumes only), as the hot reads are batched
 * (turn-batch.ts): on a loaded server one write round trip then serves several requests.
 *
 * Parts of one kind ({@link Merged}: every gate, the token upserts, the audit rows) go in one CTE
 * for all of a statement's batches, over a VALUES list whose rows carry their batch's index:
 * parsing and planning a statement costs by its CTEs far more than by its rows (eight exchanges'
 * writes as 24 CTEs took 8.4–9.4 ms on PostgreSQL and 11.7–17.7 ms on PGlite; as 3, 3.9–4.0 and
 * 5.9–7.3 ms: README "Performance").
 *
 * @example const batch = new WriteBatch(); batch.gate(consume); batch.write('outbox:evt_1', message); await sendTogether(sql, batch);
 */
import { isStoreFailure } from './store-failure.js';
import type { HotSql } from './sql.js';
import { turnBatch } from './turn-batch.js';

/** Adds a statement parameter and answers its placeholder (`$n`). */
export type Placeholder = (value: unknown) => string;

/**
 * Rows of one kind, sent in one CTE with the rows of that kind of every batch in the statement.
 * The CTE reads them from `v`, a VALUES list: the statement's own columns first (a gate's
 * `gate` and `batch`; a write's `batch` and `gates`), then {@link columns}.
 */
export interface Merged {
  /** Parts with the same key and {@link columns} share a CTE, whose statement the first one's {@link sql} gives. */
  readonly key: string;
  /** The names of this kind's columns, in the order of {@link values}' expressions. */
  readonly columns: readonly string[];
  /** This part's rows, each a list of SQL expressions (placeholders, cast): a gate has exactly one. */
  values(p: Placeholder): string[][];
  /**
   * The CTE's statement over `v` (`(VALUES …) v(…)`). A gate's is a conditional UPDATE
   * `RETURNING v.gate, v.batch` (the row it took); a write's writes exactly one row for each of its
   * rows where `ok` (a condition on `v`) holds.
   */
  sql(v: string, ok: string): string;
}

export interface Gate {
  /** The row it updates (`<table>:<key>`): batches that update one row never share a statement. */
  readonly row: string;
  readonly merged: Merged;
  /** Why the request fails when it did not take (another request got there first). */
  refused(): Error;
}

export interface Write {
  /** Existing rows it may update (an upsert's keys, as {@link Gate.row}); none for plain inserts. */
  rows?(): Iterable<string>;
  /** Rows merged with those of its kind of the other batches; or else {@link sql}. */
  merged?: Merged;
  /** A data-modifying statement of its own that writes only where `ok` (an SQL condition) holds, `RETURNING` a row per row written. */
  sql?(p: Placeholder, ok: string): string;
  /** Called once the statement with this write in it has committed, with the rows it wrote. */
  written?(rows: number): void;
}

type Row = Record<string, unknown>;

export class WriteBatch {
  readonly gates: Gate[] = [];
  readonly #writes = new Map<string, Write>();

  gate(gate: Gate): void {
    this.gates.push(gate);
  }

  /** Adds `write` under `key`; a later write under the same key replaces it (keeping its place). */
  write(key: string, write: Write): void {
    this.#writes.set(key, write);
  }

  /** The write under `key`, for a part that accumulates (several rows in one INSERT). */
  get(key: string): Write | undefined {
    return this.#writes.get(key);
  }

  get writes(): Iterable<Write> {
    return this.#writes.values();
  }

  get empty(): boolean {
    return this.gates.length === 0 && this.#writes.size === 0;
  }

  /** The existing rows this batch may update. */
  rows(): Set<string> {
    return new Set([...this.gates.map((gate) => gate.row), ...[...this.#writes.values()].flatMap((write) => [...write.rows?.() ?? []])]);
  }

  /** The statement of this batch alone; a write of its own (not merged) answers in column `w<n>`, n counting those writes. */
  statement(): { text: string; params: unknown[] } {
    return new Statement([this]);
  }

  /** Sends this batch alone (a prepared statement: a batch has few shapes); throws the `refused()` of a gate that did not take. */
  async send(sql: HotSql): Promise<void> {
    if (this.empty) return;
    const statement = new Statement([this]);
    const [row = {}] = await sql<Row>(statement.text, statement.params);
    const [error] = statement.outcomes(row);
    if (error) throw error;
  }
}

/** The SQL of a statement's batches, and how to read each one's outcome from its one row of results. */
class Statement {
  readonly text: string;
  readonly params: unknown[] = [];
  /** Each batch's gates, as their index in the statement. */
  readonly #gatesOf: number[][];
  /** Each batch's writes: an unmerged one's result column, a merged one's count of rows. */
  readonly #writesOf: Map<Write, string | number>[];
  readonly #batches: readonly WriteBatch[];

  constructor(batches: readonly WriteBatch[]) {
    this.#batches = batches;
    const p: Placeholder = (value) => `$${this.params.push(value)}`;
    const prefix = (b: number) => (batches.length === 1 ? '' : `b${b}_`);
    const gateKinds = new Map<string, { merged: Merged; rows: string[] }>();
    const writeKinds = new Map<string, { merged: Merged; rows: string[] }>();
    const kind = (kinds: typeof gateKinds, merged: Merged) => {
      const id = `${merged.key}(${merged.columns.join(', ')})`; // rows of one CTE have the same columns
      let found = kinds.get(id);
      if (!found) kinds.set(id, found = { merged, rows: [] });
      return found.rows;
    };
    let gates = 0;
    this.#gatesOf = batches.map((batch, b) => batch.gates.map((gate) => {
      const g = gates++;
      const [values] = gate.merged.values(p);
      kind(gateKinds, gate.merged).push(`(${g}, ${b}, ${values!.join(', ')})`);
      return g;
    }));
    const took = (batch: string, count: string) => (gates === 0 ? 'true' : `(SELECT count(*) FROM took WHERE took.batch = ${batch}) = ${count}`);

    const own: string[] = [];
    const columns: string[] = gates === 0 ? [] : ["array_to_string(ARRAY(SELECT gate FROM took), ',') AS took"];
    this.#writesOf = batches.map((batch, b) => {
      const named = new Map<Write, string | number>();
      let unmerged = 0;
      for (const write of batch.writes) {
        if (write.merged) {
          const rows = write.merged.values(p);
          for (const values of rows) kind(writeKinds, write.merged).push(`(${b}, ${batch.gates.length}, ${values.join(', ')})`);
          named.set(write, rows.length);
        } else {
          const name = `${prefix(b)}w${unmerged++}`;
          named.set(write, name);
          own.push(`${name} AS (${write.sql!(p, took(String(b), String(batch.gates.length)))})`);
          columns.push(`(SELECT count(*) FROM ${name})::int AS ${name}`);
        }
      }
      return named;
    });

    const ctes = [
      ...[...gateKinds.values()].map(({ merged, rows }, k) => `g${k} AS (${merged.sql(`(VALUES ${rows.join(', ')}) v(gate, batch, ${merged.columns.join(', ')})`, 'true')})`),
      ...(gates === 0 ? [] : [`took AS (${[...gateKinds.keys()].map((_, k) => `SELECT gate, batch FROM g${k}`).join(' UNION ALL ')})`]),
      ...[...writeKinds.values()].map(({ merged, rows }, k) => `m${k} AS (${merged.sql(`(VALUES ${rows.join(', ')}) v(batch, gates, ${merged.columns.join(', ')})`, took('v.batch', 'v.gates'))})`),
      ...own,
    ];
    // A statement of merged writes alone still answers a row.
    this.text = `WITH ${ctes.join(', ')} SELECT ${columns.length > 0 ? columns.join(', ') : 'true AS written'}`;
  }

  /**
   * Each batch's outcome from `row`, the statement's one row of results: the `refused()` of its
   * first gate that did not take (it fails alone), or else nothing, once each of its writes was
   * told what it wrote.
   */
  outcomes(row: Row): unknown[] {
    const took = new Set(String(row.took ?? '').split(',').filter(Boolean).map(Number));
    return this.#batches.map((batch, b) => {
      try {
        const refused = batch.gates.find((_, i) => !took.has(this.#gatesOf[b]![i]!));
        if (refused) throw refused.refused();
        for (const write of batch.writes) {
          const counted = this.#writesOf[b]!.get(write)!;
          write.written?.(typeof counted === 'number' ? counted : Number(row[counted] ?? 0)); // a merged write wrote each of its rows
        }
        return undefined;
      } catch (error) {
        return error;
      }
    });
  }
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

async function sendStatement(sql: HotSql, batches: WriteBatch[]): Promise<[unknown, undefined][]> {
  if (batches.length === 1) {
    try {
      await batches[0]!.send(sql);
      return [[null, undefined]];
    } catch (error) {
      return [[error, undefined]];
    }
  }
  const statement = new Statement(batches);
  let row: Row;
  try {
    [row = {}] = await sql<Row>(statement.text, statement.params, { prepare: false }); // shapes vary: not worth preparing
  } catch (error) {
    if (isStoreFailure(error)) return batches.map(() => [error, undefined]);
    // Rolled back whole (one batch's bad data, a deadlock with another instance): each alone.
    const alone: [unknown, undefined][] = [];
    for (const batch of batches) alone.push(...await sendStatement(sql, [batch]));
    return alone;
  }
  return statement.outcomes(row).map((error): [unknown, undefined] => [error ?? null, undefined]);
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
