/**
 * The audit trail's one writer (issue 11): each security event becomes a row of `audit_events`
 * and one log line (`msg: "audit"`) with the same fields: the event, who acted (`actor`), the
 * user and client concerned, the request's address and id, and a small `detail` object.
 *
 * Never a secret: `detail` values under the logger's secret field names (password, client
 * secret, code, token, cookie, authorization, …) are stored as "[Redacted]", as the logger
 * prints them; callers put names and ids there, never credentials.
 *
 * A change and its row commit together: {@link AuditLog.within} hands out a writer for the
 * caller's transaction and logs the lines only once that transaction succeeded, so a change
 * that rolls back leaves neither. On the request path a row joins the request's one write
 * statement instead ({@link AuditLog.inStatement}). Made once in the composition root and passed down.
 *
 * @example await audit.within((write) => prisma.$transaction(async (tx) => { …; await write(tx, 'user.enabled', { user: id }, context); }));
 */
import type { Prisma } from '../generated/prisma/client.js';
import type { HotSql } from '../store/sql.js';
import { sendTogether, WriteBatch } from '../store/write-batch.js';
import type { Merged, Write } from '../store/write-batch.js';
import type { Logger } from '../ops/logger.js';
import { SECRET_FIELDS } from '../ops/logger.js';
import type { AuditEventName } from './audit-events.js';

/** Who acted and from where: the same for every row one request (or one CLI command) writes. */
export interface AuditContext {
  /** `user:<uuid>`, `client:<client_id>`, `operator`, `anonymous` or `system` (audit-events.ts). */
  readonly actor: string;
  readonly address?: string | undefined;
  readonly requestId?: string | undefined;
  /** Merged into each row's detail (the CLI's `os_user`). */
  readonly detail?: Readonly<Record<string, unknown>>;
}

/** What one event is about. */
export interface AuditFields {
  readonly user?: string | null | undefined;
  readonly client?: string | null | undefined;
  readonly detail?: Readonly<Record<string, unknown>>;
}

/** A row's column values, named as the columns are, for statements that write the row themselves. */
export interface AuditRow {
  event: AuditEventName;
  actor: string;
  user_id: string | null;
  client_id: string | null;
  address: string | null;
  request_id: string | null;
  detail: Record<string, unknown>;
}

const SECRETS = new Set(SECRET_FIELDS.map((field) => field.toLowerCase()));

function redacted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redacted);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, SECRETS.has(key.toLowerCase()) ? '[Redacted]' : redacted(inner)]));
}

/** The column values of one event's row (pure: no I/O). */
export function auditRow(event: AuditEventName, fields: AuditFields, context: AuditContext): AuditRow {
  return {
    event,
    actor: context.actor,
    user_id: fields.user ?? null,
    client_id: fields.client ?? null,
    address: context.address ?? null,
    request_id: context.requestId ?? null,
    detail: redacted({ ...context.detail, ...fields.detail }) as Record<string, unknown>,
  };
}

/** Prisma, or an open transaction of it. */
export type AuditWriter = Pick<Prisma.TransactionClient, 'auditEvent'>;

/** Writes one row with `tx` (the caller's transaction); its line follows the commit. */
export type AuditWrite = (tx: AuditWriter, event: AuditEventName, fields: AuditFields, context: AuditContext) => Promise<void>;

export interface AuditLog {
  /** Records an event that changes nothing stored (a login, a consent): its row, then its line. */
  record(event: AuditEventName, fields: AuditFields, context: AuditContext): Promise<void>;
  /** Runs `run` with a writer for its transaction; the lines are logged once `run` resolved. */
  within<T>(run: (write: AuditWrite) => Promise<T>): Promise<T>;
  /**
   * The row as a write of the request's one statement (store/write-batch.ts): stored with the
   * change it records, or not at all (a code redemption that lost its race leaves no row), and
   * logged once that statement committed.
   */
  inStatement(row: AuditRow): Write;
}

/** Audit rows written with a request's other writes: one CTE for those of every request in the statement. */
const AUDIT_ROWS: Omit<Merged, 'values'> = {
  key: 'audit_events',
  columns: ['event', 'actor', 'user_id', 'client_id', 'address', 'request_id', 'detail'],
  sql: (v, ok) => `INSERT INTO audit_events (event, actor, user_id, client_id, address, request_id, detail)
    SELECT event, actor, user_id, client_id, address, request_id, detail FROM ${v} WHERE ${ok} RETURNING 1`,
};

/**
 * `sql`: the request path's driver (store/database.ts `db.sql`); with it, an event recorded on
 * its own goes out with the writes other requests send in the same turn (store/write-batch.ts),
 * without Prisma. Without it (the CLI), through Prisma.
 */
export function createAuditLog({ prisma, sql, logger }: { prisma: AuditWriter; sql?: HotSql; logger: Logger }): AuditLog {
  const insert = (tx: AuditWriter, row: AuditRow) => tx.auditEvent.create({
    data: {
      event: row.event, actor: row.actor, userId: row.user_id, clientId: row.client_id,
      address: row.address, requestId: row.request_id, detail: row.detail as Prisma.InputJsonObject,
    },
    select: { id: true },
  });
  // The line is the row: fixed fields, none named for a secret, and a detail auditRow already
  // redacted at any depth. The logger's own redaction could never change it, and costs ≈ 30 µs a
  // line here (7× the line: README "Performance"), on every token response.
  const lines = logger.child({}, { redact: [] });
  const log = (row: AuditRow) => { lines.info({ ...row }, 'audit'); };
  const inStatement = (row: AuditRow): Write => ({
    merged: {
      ...AUDIT_ROWS,
      values: (p) => [[`${p(row.event)}::text`, `${p(row.actor)}::text`, `${p(row.user_id)}::text`, `${p(row.client_id)}::text`, `${p(row.address)}::text`, `${p(row.request_id)}::text`, `${p(JSON.stringify(row.detail))}::jsonb`]],
    },
    written: (rows) => { if (rows) log(row); },
  });

  return {
    async record(event, fields, context) {
      const row = auditRow(event, fields, context);
      if (!sql) {
        await insert(prisma, row);
        log(row);
        return;
      }
      const batch = new WriteBatch();
      batch.write('audit', inStatement(row));
      await sendTogether(sql, batch); // awaited here: written before the request goes on, whatever it does next
    },
    async within(run) {
      const written: AuditRow[] = [];
      const result = await run(async (tx, event, fields, context) => {
        const row = auditRow(event, fields, context);
        await insert(tx, row);
        written.push(row);
      });
      written.forEach(log);
      return result;
    },
    inStatement,
  };
}
