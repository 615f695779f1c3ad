/**
 * A request's writes, sent as one statement (issue 9: "merge find + consume into one conditional
 * statement, write the access and refresh tokens (and any outbox row) in one round trip").
 *
 * Two kinds of parts join a batch as the provider and the app make their changes:
 * - a **gate**: a conditional `UPDATE … RETURNING 1` (a code or refresh token consumed only if
 *   nobody consumed it first). It *took* when it returned a row.
 * - a **write**: an `INSERT … SELECT … WHERE <ok>` (tokens, outbox messages, audit rows), where
 *   `<ok>` holds exactly when every gate took.
 *
 * They go out as data-modifying CTEs of one statement, which PostgreSQL runs in one snapshot and
 * one transaction: either every gate took and everything is written, or nothing is and the
 * first refused gate's error is thrown (RFC 6749 §4.1.2: a code is used at most once, and a
 * redemption that lost the race leaves no token, no event and no audit row behind).
 *
 * @example const batch = new WriteBatch(); batch.gate(consume); batch.write('outbox:evt_1', message); await batch.send(sql);
 */
import type { HotSql } from './sql.js';

/** Adds a statement parameter and answers its placeholder (`$n`). */
export type Placeholder = (value: unknown) => string;

export interface Gate {
  /** A conditional `UPDATE … RETURNING 1`. */
  sql(p: Placeholder): string;
  /** Why the request fails when it did not take (another request got there first). */
  refused(): Error;
}

export interface Write {
  /** A data-modifying statement that writes only where `ok` (an SQL condition) holds, `RETURNING` a row per row written. */
  sql(p: Placeholder, ok: string): string;
  /** Called once the statement with this write in it has committed, with the rows it wrote. */
  written?(rows: number): void;
}

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

  /**
   * The statement: gates `g0…` and writes `w0…` as CTEs; its one row says whether each gate
   * took (`g0…`) and how many rows each write wrote (`w0…`).
   */
  statement(): { text: string; params: unknown[] } {
    const params: unknown[] = [];
    const p: Placeholder = (value) => `$${params.push(value)}`;
    const took = this.#gates.map((_, i) => `EXISTS (SELECT 1 FROM g${i})`);
    const ok = took.length ? took.join(' AND ') : 'true';
    const ctes = [
      ...this.#gates.map((gate, i) => `g${i} AS (${gate.sql(p)})`),
      ...[...this.#writes.values()].map((write, i) => `w${i} AS (${write.sql(p, ok)})`),
    ];
    const columns = [
      ...took.map((exists, i) => `${exists} AS g${i}`),
      ...[...this.#writes.keys()].map((_, i) => `(SELECT count(*) FROM w${i})::int AS w${i}`),
    ];
    return { text: `WITH ${ctes.join(', ')} SELECT ${columns.join(', ')}`, params };
  }

  /** Sends the batch; throws the `refused()` of a gate that did not take (and then nothing was written). */
  async send(sql: HotSql): Promise<void> {
    if (this.empty) return;
    const { text, params } = this.statement();
    const [row = {}] = await sql<Record<string, boolean | number>>(text, params);
    const refused = this.#gates.find((_, i) => row[`g${i}`] !== true);
    if (refused) throw refused.refused();
    [...this.#writes.values()].forEach((write, i) => write.written?.(Number(row[`w${i}`] ?? 0)));
  }
}
