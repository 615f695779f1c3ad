/**
 * The audit trail's one writer: each security event becomes a row of `audit_events` and one
 * log line (`msg: "audit"`) with the same fields: the event, who acted (`actor`), the user and
 * client concerned, the request's address and id, and a small `detail` object.
 *
 * Never a secret: `detail` values under the logger's secret field names (password, client
 * secret, code, token, cookie, authorization, …) are stored as "[Redacted]", as the logger
 * prints them; callers put names and ids there, never credentials.
 *
 * A change and its row commit together: {@link AuditLog.within} hands out a writer for the
 * caller's transaction and logs the lines only once that transaction succeeded, so a change that
 * rolls back leaves neither; {@link AuditLog.add} adds the row to writes sent as one statement
 * (a request's, store/request-state.ts), logged once they committed. The rest of the app says
 * what happened through audit/records.ts, the one caller of both, which writes the row in one of
 * these two ways with the webhook events and counts of the same change. Made once in the
 * composition root and passed down.
 *
 * @example await audit.within((write) => prisma.$transaction(async (tx) => { …; await write(tx, 'user.enabled', { user: id }, context); }));
 */
import type { Prisma } from '../generated/prisma/client.js';
import type { AuditValues, Writes } from '../store/request-state.js';
import type { Logger } from '../ops/logger.js';
import { SECRET_FIELDS } from '../ops/logger.js';
import type { AuditEventName } from './audit-events.js';

/** Who acted: a signed-in user, a client with its credentials, the CLI, nobody known, the service itself. */
export const userActor = (userId: string) => `user:${userId}`;
export const clientActor = (clientId: string) => `client:${clientId}`;
/** The administration CLI; the OS user who ran it is in the row's detail (`os_user`). */
export const OPERATOR = 'operator';
/** Someone not (or not yet) authenticated: a failed login, an open registration. */
export const ANONYMOUS = 'anonymous';
/** The service on its own account (no one asked for it). */
export const SYSTEM = 'system';

/** Who acted and from where: the same for every row one request (or one CLI command) writes. */
export interface AuditContext {
  /** `user:<uuid>`, `client:<client_id>`, `operator`, `anonymous` or `system`. */
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

/** A row's column values, named as the columns are. */
export type AuditRow = AuditValues & { event: AuditEventName };

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
  /** Runs `run` with a writer for its transaction; the lines are logged once `run` resolved. */
  within<T>(run: (write: AuditWrite) => Promise<T>): Promise<T>;
  /**
   * Adds the row to `writes` (sent as one statement: store/request-state.ts): stored with the
   * change it records, or not at all, and logged once that statement committed.
   */
  add(writes: Writes, event: AuditEventName, fields: AuditFields, context: AuditContext): void;
}

export function createAuditLog({ logger }: { logger: Logger }): AuditLog {
  const insert = (tx: AuditWriter, row: AuditRow) => tx.auditEvent.create({
    data: {
      event: row.event, actor: row.actor, userId: row.user_id, clientId: row.client_id,
      address: row.address, requestId: row.request_id, detail: row.detail as Prisma.InputJsonObject,
    },
    select: { id: true },
  });
  // The line is the row: fixed fields, none named for a secret, and a detail auditRow already
  // redacted at any depth; the logger's own redaction could never change it, and is costly.
  const lines = logger.child({}, { redact: [] });
  const log = (row: AuditRow) => { lines.info({ ...row }, 'audit'); };
  const add = (writes: Writes, event: AuditEventName, fields: AuditFields, context: AuditContext) => {
    const row = auditRow(event, fields, context);
    writes.audit.push(row);
    writes.committed.push(() => log(row));
  };

  return {
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
    add,
  };
}
