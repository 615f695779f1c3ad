/**
 * What users do to their own accounts (docs/accounts.md), each one transaction with its audit rows
 * and webhook events (audit/records.ts `change`):
 *
 * | action              | change                                                              | audit, events                                   |
 * |---------------------|---------------------------------------------------------------------|-------------------------------------------------|
 * | changePassword      | a new argon2id hash; every session ended (this browser signs in again just after) | user.password_changed, user.signed_out |
 * | signOutEverywhere   | every session ended, every grant without offline_access revoked     | user.signed_out; token.revoked                  |
 * | requestVerification | a verification mail queued                                          | user.email_verification_requested               |
 * | requestReset        | a reset mail queued for the address typed (nothing looked up here)  | user.password_reset_requested                   |
 * | completeReset       | the link used, a new hash, the address verified, every session ended, grants without offline_access revoked | user.password_reset, user.signed_out; user.password_reset, token.revoked |
 * | verifyEmail         | the link used, `email_verified` set                                 | user.email_verified                             |
 *
 * Sessions end through oidc/session-end.ts `endUserSessions`, as an operator's users:sign-out does:
 * with them what they made, and a logout token to each application that asked for one.
 *
 * @example const { at } = await self.changePassword(user, 'new password', context);
 */
import { checkToken, useAllTokens, useToken } from '../accounts/account-tokens.js';
import type { LinkPurpose, TokenCheck } from '../accounts/account-tokens.js';
import type { User, UserStore } from '../accounts/user-store.js';
import type { AuditContext } from '../audit/audit-log.js';
import type { MailConfig } from '../config.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { enqueueMail } from '../mail/mail-outbox.js';
import { endUserSessions } from '../oidc/session-end.js';
import type { SessionEnd } from '../oidc/session-end.js';
import type { ChangeTransaction } from '../audit/records.js';

export interface SelfService {
  /** Sets a new password; ends every session, at `at` (sign this browser in after it). */
  changePassword(user: User, password: string, context: AuditContext): Promise<{ at: Date }>;
  signOutEverywhere(user: User, context: AuditContext): Promise<void>;
  requestVerification(user: User, context: AuditContext): Promise<void>;
  /** Queues a reset mail for `address` as typed, whoever it names (the same work for every address). */
  requestReset(address: string, context: AuditContext): Promise<void>;
  /** What a reset link is worth now, without using it. */
  checkReset(token: string): Promise<TokenCheck>;
  /** Uses the link and sets `password` (hashed before: `hash`). */
  completeReset(token: string, passwordHash: string, context: AuditContext): Promise<TokenCheck>;
  verifyEmail(token: string, context: AuditContext): Promise<TokenCheck>;
  /** Audits a refused link (`user.link_refused`). */
  refused(check: TokenCheck & { refused: string }, purpose: LinkPurpose, context: AuditContext): Promise<void>;
}

export interface SelfServiceDependencies {
  prisma: PrismaClient;
  users: Pick<UserStore, 'hashNewPassword'>;
  changes: ChangeTransaction;
  mail: MailConfig;
  clock: () => Date;
  /** Told once a mail was queued (the worker looks at once). */
  queued: () => void;
  /** Where a user's sessions end (oidc/session-end.ts); woken once the change committed. */
  sessions: Pick<SessionEnd, 'within' | 'wake'>;
}

export function createSelfService(deps: SelfServiceDependencies): SelfService {
  const { changes, clock } = deps;
  const about = (user: Pick<User, 'id' | 'username'>, detail: Record<string, unknown> = {}) => ({ user: user.id, detail: { username: user.username, ...detail } });
  const queue = async <T>(work: () => Promise<T>) => { const result = await work(); deps.queued(); return result; };
  /** `work`, then the back-channel logouts it queued are sent (the worker also polls). */
  const ending = async <T>(work: () => Promise<T>) => { const result = await work(); deps.sessions.wake(); return result; };

  return {
    async changePassword(user, password, context) {
      const passwordHash = await deps.users.hashNewPassword(password); // argon2 before the transaction
      const at = clock();
      await ending(() => changes(async (tx, record) => {
        await tx.user.update({ where: { id: user.id }, data: { passwordHash } });
        await record.audit('user.password_changed', about(user), context);
        // A session taken with the old password (a stolen cookie) ends with it.
        await endUserSessions(deps.sessions, tx, record, user, { reason: 'password_changed', at }, context);
      }));
      return { at };
    },
    async signOutEverywhere(user, context) {
      await ending(() => changes((tx, record) => endUserSessions(deps.sessions, tx, record, user, { reason: 'signed_out_everywhere', revokeOnline: 'signed_out_everywhere' }, context)));
    },
    requestVerification(user, context) {
      const now = clock();
      return queue(() => changes(async (tx, record) => {
        await enqueueMail(tx, { kind: 'email_verification', recipient: user.email, userId: user.id }, new Date(now.getTime() + deps.mail.emailVerificationTtlMs), now);
        await record.audit('user.email_verification_requested', about(user), context);
      }));
    },
    requestReset(address, context) {
      const now = clock();
      return queue(() => changes(async (tx, record) => {
        await enqueueMail(tx, { kind: 'password_reset', recipient: address }, new Date(now.getTime() + deps.mail.passwordResetTtlMs), now);
        await record.audit('user.password_reset_requested', { detail: { email: address } }, context);
      }));
    },
    checkReset: (token) => checkToken(deps.prisma, token, 'password_reset', clock()),
    completeReset(token, passwordHash, context) {
      const now = clock();
      return ending(() => changes(async (tx, record) => {
        const used = await useToken(tx, token, 'password_reset', now);
        if ('refused' in used) return used;
        const user = await tx.user.findUniqueOrThrow({ where: { id: used.userId } });
        // Following the link proved the mailbox: the address is verified too.
        await tx.user.update({ where: { id: user.id }, data: { passwordHash, emailVerified: true } });
        await useAllTokens(tx, user.id, 'password_reset', now);
        const clients = await tx.$queryRaw<{ client_id: string; client_name: string | null }[]>`
          SELECT DISTINCT g.payload->>'clientId' AS client_id, c.client_name FROM oidc_models g LEFT JOIN clients c ON c.client_id = g.payload->>'clientId'
          WHERE g.type = 'Grant' AND g.payload->>'accountId' = ${user.id}`;
        await record.audit('user.password_reset', about(user), context);
        const { revoked } = await endUserSessions(deps.sessions, tx, record, user, { reason: 'password_reset', revokeOnline: 'password_reset', at: now }, context);
        for (const { client_id: clientId, client_name: clientName } of clients) {
          await record.event('user.password_reset', {
            client_id: clientId, client_name: clientName ?? clientId, username: user.username, grant_revoked: revoked.some((r) => r.clientId === clientId),
          });
        }
        return used;
      }));
    },
    verifyEmail(token, context) {
      const now = clock();
      return changes(async (tx, record) => {
        const used = await useToken(tx, token, 'email_verification', now);
        if ('refused' in used) return used;
        const user = await tx.user.update({ where: { id: used.userId }, data: { emailVerified: true } });
        await record.audit('user.email_verified', about(user), context);
        return used;
      });
    },
    refused(check, purpose, context) {
      return changes(async (_tx, record) => {
        await record.audit('user.link_refused', { user: check.userId, detail: { purpose, reason: check.refused } }, context);
      });
    },
  };
}
