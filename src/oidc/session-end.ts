/**
 * The one place a login session ends, however it ends: RP-initiated logout (/api/logout.php),
 * the user's sign-out on the applications page, an operator (`users:sign-out`, `users:set-password`,
 * `users:disable`: admin/user-admin.ts), the user on the account page (a password change, "sign
 * out everywhere") and a password reset by mail ({@link endUserSessions}). In one transaction:
 *
 * | step                                                                 | why                                                  |
 * |----------------------------------------------------------------------|------------------------------------------------------|
 * | take the session's `SessionClient` records (deleted: told once)      | which applications it signed in to, with their `sid` |
 * | end the grants they used that lack offline_access, with their tokens | tokens without offline_access die with the session   |
 * | announce those (`token.revoked`, reason `session_ended`), audit      | as every revocation is (grant-revocations.ts)        |
 * | a back-channel logout message for each client with a backchannel_logout_uri | OpenID Connect Back-Channel Logout 1.0 §2.5  |
 * | one `session.ended` audit row per user                               |                                                      |
 *
 * A `SessionClient` record is written with the authorization the session makes (provider
 * events, {@link sessionClientWrites}), into `oidc_models` with the session's uid, and outlives
 * the session from that authorization on; a later authorization writes it again only when it
 * would change or no longer outlive the session. The login session itself (Redis or memory) is ended by the caller
 * (the provider's end-session step, the applications page), or refused from then on
 * (`sessions_ended_at`, for an operator, who has no Redis).
 *
 * @see https://openid.net/specs/openid-connect-backchannel-1_0.html, docs/sessions-and-logout.md
 * @example await sessions.end({ sessionUid: session.uid }, 'logout', requestContext(ctx, userActor(accountId)));
 */
import { Prisma } from '../generated/prisma/client.js';
import type { AuditContext } from '../audit/audit-log.js';
import { logoutFieldsOf } from '../clients/client-metadata.js';
import { SESSION_CLIENT, sessionClientId } from '../store/hot-reads.js';
import { currentState, modelKey } from '../store/request-state.js';
import type { ModelWrite } from '../store/request-state.js';
import type { ChangeTransaction, Recorder } from '../audit/records.js';
import type { BackchannelLogouts, LogoutMessage } from '../webhooks/backchannel-logouts.js';
import type { RevocationReason } from '../webhooks/events.js';
import type { Writer } from '../webhooks/outbox.js';
import { endGrants } from './authorized-apps.js';
import type { ApplicationRevoked } from './authorized-apps.js';
import { announceRevocations } from './grant-revocations.js';


/** What one record says: in session `sessionUid`, `accountId` signed in to `clientId` (its `sid`, its grant). */
export interface SessionClient {
  sessionUid: string;
  accountId: string;
  clientId: string;
  sid: string;
  grantId: string | undefined;
  /** The client's backchannel_logout_uri when it signed in (a metadata document's client has no row to read it from later). */
  backchannelLogoutUri: string | undefined;
}

/** Which sessions end: one (all its applications, or those named only), or every session of a user. */
export type SessionScope = { sessionUid: string; clientIds?: readonly string[] } | { accountId: string };

/** Why: the user signed out (at /api/logout.php or the applications page), or an operator's doing. */
export type EndReason = 'logout' | 'applications_page' | 'sign_out' | 'password_set' | 'disabled' | 'password_changed' | 'password_reset' | 'signed_out_everywhere';

export interface SessionsEnded {
  /** Applications told by back-channel logout. */
  told: string[];
  /** Grants ended (those without offline_access). */
  grantsEnded: number;
}

/**
 * How much longer than the session a record is written to live: the authorizations that follow
 * within this margin find it outliving the session already and write nothing, so a silent
 * authorization repeated all day writes its session's record at most once that day.
 */
export const RECORD_MARGIN_SECONDS = 24 * 3600;

const FIELDS = ['sessionUid', 'accountId', 'clientId', 'sid', 'grantId', 'backchannelLogoutUri'] as const;

/**
 * The `oidc_models` row recording `record`, to be written with the authorization
 * (store/request-state.ts); none when the request's client read brought the record along
 * (store/hot-reads.ts) saying the same and living at least `sessionTtlSeconds` from `now`, as
 * long as the session this authorization extends (the provider's sessions slide).
 */
export function sessionClientWrites(record: SessionClient, now: number, sessionTtlSeconds: number): ModelWrite[] {
  const id = sessionClientId(record.sessionUid, record.clientId);
  const stored = currentState()?.models.get(modelKey(SESSION_CLIENT, id));
  if (stored && (stored.expires_ms ?? Infinity) >= now + sessionTtlSeconds * 1000 && FIELDS.every((field) => stored.payload[field] === record[field])) return [];
  return [{
    type: SESSION_CLIENT,
    id,
    payload: JSON.stringify(record),
    grantId: null, // not the grant's: revoking a grant must not forget which sessions used it
    uid: record.sessionUid,
    userCode: null,
    expiresAt: new Date(now + (sessionTtlSeconds + RECORD_MARGIN_SECONDS) * 1000).toISOString(),
  }];
}

/**
 * Takes (deletes) the records in `scope`, returning those whose session may still be alive: a
 * record outlives the last expiry its session was given by {@link RECORD_MARGIN_SECONDS}; a
 * session past that expiry has ended on its own, and its applications are told nothing more.
 */
async function takeRecords(tx: Writer, scope: SessionScope): Promise<SessionClient[]> {
  const where = 'accountId' in scope
    ? Prisma.sql`payload->>'accountId' = ${scope.accountId}`
    : scope.clientIds
      ? Prisma.sql`uid = ${scope.sessionUid} AND payload->>'clientId' = ANY (${[...scope.clientIds]}::text[])`
      : Prisma.sql`uid = ${scope.sessionUid}`;
  const rows = await tx.$queryRaw<{ payload: SessionClient; alive: boolean }[]>`
    DELETE FROM oidc_models WHERE type = ${SESSION_CLIENT} AND ${where}
    RETURNING payload, (expires_at IS NULL OR expires_at > now() + make_interval(secs => ${RECORD_MARGIN_SECONDS})) AS alive`;
  return rows.filter((row) => row.alive).map((row) => row.payload);
}

/** The back-channel logout messages: a client's URI as registered now (its row), else as it was at sign-in (a metadata document's client). */
async function messagesFor(tx: Writer, records: SessionClient[]): Promise<LogoutMessage[]> {
  const rows = await tx.client.findMany({ where: { clientId: { in: [...new Set(records.map((r) => r.clientId))] } }, select: { clientId: true, metadata: true } });
  const current = new Map(rows.map((row) => [row.clientId, logoutFieldsOf(row).backchannel_logout_uri]));
  const messages: LogoutMessage[] = [];
  for (const record of records) {
    const url = current.has(record.clientId) ? current.get(record.clientId) : record.clientId.startsWith('https://') ? record.backchannelLogoutUri : undefined;
    if (url) messages.push({ clientId: record.clientId, url, accountId: record.accountId, sid: record.sid });
  }
  return messages;
}

export interface SessionEnd {
  /** Ends the sessions in `scope` within the caller's change (its `tx` and `record`: audit/records.ts); call {@link SessionEnd.wake} after it committed. */
  within(tx: Writer, record: Recorder, scope: SessionScope, reason: EndReason, context: AuditContext): Promise<SessionsEnded>;
  /** Ends the sessions in `scope` in a transaction of its own, then wakes the delivery. */
  end(scope: SessionScope, reason: EndReason, context: AuditContext): Promise<SessionsEnded>;
  /** Sends what was just committed (the worker also polls: this only saves the wait). */
  wake(): void;
}

export function createSessionEnd({ changes, logouts }: { changes: ChangeTransaction; logouts: Pick<BackchannelLogouts, 'enqueue' | 'wake'> }): SessionEnd {
  const within: SessionEnd['within'] = async (tx, record, scope, reason, context) => {
    const records = await takeRecords(tx, scope);
    const grantIds = [...new Set(records.map((r) => r.grantId).filter((id): id is string => typeof id === 'string'))];
    const ended = grantIds.length ? await endGrants(tx as Prisma.TransactionClient, { grantIds }) : [];
    await announceRevocations(record, ended, 'session_ended', context);
    const messages = await messagesFor(tx, records);
    await logouts.enqueue(tx, messages, new Date());
    const told = [...new Set(messages.map((m) => m.clientId))];
    const grantsEnded = ended.reduce((sum, e) => sum + e.grantIds.length, 0);
    for (const accountId of new Set(records.map((r) => r.accountId))) {
      const mine = records.filter((r) => r.accountId === accountId);
      await record.audit('session.ended', { user: accountId, detail: { reason, clients: [...new Set(mine.map((r) => r.clientId))], backchannel_logout: told.filter((id) => mine.some((r) => r.clientId === id)) } }, context);
    }
    return { told, grantsEnded };
  };
  return {
    within,
    async end(scope, reason, context) {
      const result = await changes((tx, record) => within(tx, record, scope, reason, context));
      logouts.wake();
      return result;
    },
    wake: () => logouts.wake(),
  };
}

/** What ending every session of a user also does (the account page, a password reset). */
export interface UserSessionsEnd {
  reason: EndReason;
  /**
   * Also end every grant of the user without `offline_access`, announced with this reason, not
   * only those their sessions made (a password reset: whatever the old password let in).
   */
  revokeOnline?: RevocationReason;
  /** The instant written (default now); the caller may need it, to sign this browser in again just after. */
  at?: Date;
}

/**
 * Ends every session of `user` in the caller's change: `sessions_ended_at` (every login session
 * and page sign-in made up to it is over wherever it lives: accounts/provider-account.ts), audited
 * as `user.signed_out`; with `revokeOnline`, every grant without `offline_access`; then, through
 * {@link SessionEnd.within}, what those sessions made and a logout token to each application
 * that asked for one. Resolves `ended: false` (nothing written) when the user no longer exists.
 * The caller wakes the delivery (`sessions.wake()`) once its change committed.
 */
export async function endUserSessions(
  sessions: Pick<SessionEnd, 'within'>, tx: Writer, record: Recorder, user: { id: string; username: string }, end: UserSessionsEnd, context: AuditContext,
): Promise<{ ended: boolean; revoked: ApplicationRevoked[] }> {
  const { count } = await tx.user.updateMany({ where: { id: user.id }, data: { sessionsEndedAt: end.at ?? new Date() } });
  if (count === 0) return { ended: false, revoked: [] };
  const revoked = end.revokeOnline ? await endGrants(tx as Prisma.TransactionClient, { accountId: user.id, keepOffline: true }) : [];
  if (end.revokeOnline) await announceRevocations(record, revoked, end.revokeOnline, context);
  await record.audit('user.signed_out', { user: user.id, detail: { username: user.username, reason: end.reason, ...(end.revokeOnline ? { grants_revoked: revoked.reduce((n, r) => n + r.grantIds.length, 0) } : {}) } }, context);
  await sessions.within(tx, record, { accountId: user.id }, end.reason, context);
  return { ended: true, revoked };
}
