/**
 * Ending every session of a user: the one function each door that signs a user out everywhere
 * calls, in the caller's transaction. An operator (users:sign-out, users:set-password,
 * users:disable), the user on the account page (a password change, "sign out everywhere") and a
 * password reset by mail all come through here.
 *
 * Ending sessions is one stored instant, `sessions_ended_at` (accounts/provider-account.ts
 * `sessionEnded`): every login session and page sign-in made up to it is over wherever it lives.
 * With `revokeOnline`, the grants the user gave without `offline_access` end too, with every token
 * issued under them (announced as `token.revoked` with the reason): a client that asked to act
 * while the user is away keeps its grant; the others stop with the sessions.
 *
 * @example await changes((tx, raise, audit) => endSessions(tx, raise, audit, user, { reason: 'signed_out_everywhere', revokeOnline: true }, context));
 */
import type { AuditContext } from '../audit/audit-log.js';
import type { Audit } from '../webhooks/audited-changes.js';
import type { RevocationReason } from '../webhooks/events.js';
import type { Writer } from '../webhooks/outbox.js';
import type { Raise } from '../webhooks/webhook-service.js';
import { endGrants } from './authorized-apps.js';
import type { ApplicationRevoked } from './authorized-apps.js';
import { announceRevocations } from './grant-revocations.js';

/** Why the sessions ended: the audit row's `detail.reason` (`user.signed_out`). */
export type SessionEndReason = 'sign_out' | 'password_set' | 'disabled' | 'password_changed' | 'password_reset' | 'signed_out_everywhere';

export interface SessionEnd {
  reason: SessionEndReason;
  /** Also end the grants without `offline_access`, announced with this reason (default: none ended). */
  revokeOnline?: RevocationReason;
  /** The instant written (default now); the caller may need it, to sign this browser in again just after. */
  at?: Date;
}

/**
 * Ends every session of `user` (and with `revokeOnline`, their online grants), audited as
 * `user.signed_out`. Resolves `ended: false` (nothing written) when the user no longer exists.
 */
export async function endSessions(
  tx: Writer, raise: Raise, audit: Audit, user: { id: string; username: string }, end: SessionEnd, context: AuditContext,
): Promise<{ ended: boolean; revoked: ApplicationRevoked[] }> {
  const { count } = await tx.user.updateMany({ where: { id: user.id }, data: { sessionsEndedAt: end.at ?? new Date() } });
  if (count === 0) return { ended: false, revoked: [] };
  const revoked = end.revokeOnline ? await endGrants(tx, { accountId: user.id, keepOffline: true }) : [];
  if (end.revokeOnline) await announceRevocations(raise, audit, revoked, end.revokeOnline, context);
  await audit('user.signed_out', { user: user.id, detail: { username: user.username, reason: end.reason, ...(end.revokeOnline ? { grants_revoked: revoked.reduce((n, r) => n + r.grantIds.length, 0) } : {}) } }, context);
  return { ended: true, revoked };
}
