/**
 * `audit:list`: the audit trail, newest first. `--user` takes an id or a username (a deleted
 * user's rows are found by id), `--client` a client_id (also of a deleted client), `--event` an
 * event name (repeatable), `--since` a time or an age.
 *
 * @example node dist/cli.js audit:list --user alice --since 7d --json
 */
import { isUuid } from '../accounts/user-store.js';
import { AUDIT_EVENT_NAMES, isAuditEventName } from '../audit/audit-events.js';
import { readAuditTrail } from '../audit/audit-trail.js';
import type { AuditEvent } from '../audit/audit-trail.js';
import { withAdmin } from './admin.js';
import { ArgumentError, parse } from './args.js';
import { iso, json, table } from './output.js';
import type { VerbTable } from './verb.js';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 10_000;
const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };
/** A date (midnight UTC), or a date and time with its offset: never a local time, which would depend on the machine. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** `--since`: an ISO 8601 time, or an age such as 30m, 24h, 7d. */
export function sinceOf(value: string, now = Date.now()): Date {
  const age = /^(\d{1,6})([mhd])$/.exec(value);
  const time = age ? new Date(now - Number(age[1]) * UNIT_MS[age[2]!]!) : isoTime(value);
  if (time && time.getTime() >= 0) return time; // 1970 at the earliest: the store's times start later
  throw new ArgumentError(`--since must be a time (2026-11-20, 2026-11-20T08:00:00Z) or an age (30m, 24h, 7d), from 1970 on, got "${value}"`);
}

/** An ISO_TIME on a real calendar day: JavaScript would read 2026-02-30 as March 2nd. */
function isoTime(value: string): Date | undefined {
  if (!ISO_TIME.test(value)) return undefined;
  const time = new Date(value);
  const day = value.slice(0, 10);
  if (Number.isNaN(time.getTime()) || new Date(`${day}T00:00:00Z`).toISOString().slice(0, 10) !== day) return undefined;
  return time;
}

function limitOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_LIMIT;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > MAX_LIMIT) throw new ArgumentError(`--limit must be a whole number from 1 to ${MAX_LIMIT}, got "${value}"`);
  return Number(value);
}

const entryJson = (row: AuditEvent) => ({
  id: String(row.id), time: iso(row.createdAt), event: row.event, actor: row.actor, user_id: row.userId, client_id: row.clientId,
  address: row.address, request_id: row.requestId, detail: row.detail,
});

export const AUDIT_VERBS: VerbTable = {
  'audit:list': {
    usage: '[--user <user>] [--client <client_id>] [--event <name>]… [--since <time|age>] [--limit <n>] [--json]',
    summary: `the audit trail, newest first (${DEFAULT_LIMIT} rows unless --limit)`,
    async run(args, io) {
      const { values } = parse(args, [], {
        user: { type: 'string' }, client: { type: 'string' }, event: { type: 'string', multiple: true },
        since: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' },
      });
      const unknown = (values.event ?? []).filter((name) => !isAuditEventName(name));
      if (unknown.length) throw new ArgumentError(`unknown event ${unknown.map((name) => `"${name}"`).join(', ')}; known: ${AUDIT_EVENT_NAMES.join(', ')}`);
      const query = {
        clientId: values.client,
        events: (values.event ?? []).filter(isAuditEventName),
        since: values.since === undefined ? undefined : sinceOf(values.since),
        limit: limitOf(values.limit),
      };
      const rows = await withAdmin(io, async (admin) => {
        const user = values.user;
        const userId = user === undefined || isUuid(user.toLowerCase()) ? user?.toLowerCase() : (await admin.users.find(user)).id;
        return readAuditTrail(admin.prisma, { ...query, userId });
      });
      if (values.json) return json(rows.map(entryJson));
      if (rows.length === 0) return 'no audit events';
      const listed = table(['TIME', 'EVENT', 'ACTOR', 'USER', 'CLIENT', 'ADDRESS', 'REQUEST_ID', 'DETAIL'], rows.map((row) => [
        iso(row.createdAt)!, row.event, row.actor, row.userId ?? '-', row.clientId ?? '-', row.address ?? '-', row.requestId ?? '-', JSON.stringify(row.detail),
      ]));
      return rows.length === query.limit ? `${listed}\n(the newest ${query.limit}; --limit shows more)` : listed;
    },
  },
};
