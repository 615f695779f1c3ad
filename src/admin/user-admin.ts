/**
 * What an operator does to users (the CLI's `user:create` and `users:*`). Every change is one
 * transaction with its audit rows, and, where grants end, with the clients' `token.revoked`
 * webhooks (reason `admin_revoked`):
 *
 * | action       | change                                                        | audit                                      |
 * |--------------|---------------------------------------------------------------|--------------------------------------------|
 * | create       | a new user; with --email-verified its address verified, else (mail on) a verification mail queued | user.created, user.email_verified or user.email_verification_requested |
 * | disable      | `disabled_at` set; every session, grant and token ended       | user.disabled, user.signed_out, token.revoked, session.ended |
 * | enable       | `disabled_at` cleared (the sessions ended stay ended)         | user.enabled                               |
 * | delete       | every grant and token ended; the user deleted                 | user.deleted, token.revoked                |
 * | setPassword  | a new argon2id hash; every session ended                      | user.password_set, user.signed_out, session.ended |
 * | signOut      | every session ended                                           | user.signed_out, session.ended             |
 * | revokeTokens | every grant and token ended                                   | token.revoked                              |
 *
 * Ending sessions is one stored instant, `sessions_ended_at` (accounts/provider-account.ts
 * `sessionEnded`): every login session and page sign-in made up to it is over wherever it lives
 * (Redis, the running service's memory, a signed cookie), and the CLI needs only the database.
 * With it, in the same transaction, oidc/session-end.ts ends what those sessions made: the grants
 * without offline_access (`token.revoked`, reason `session_ended`), and a back-channel logout
 * token to each application they signed in to that asked for one. set-password and sign-out go
 * through its `endUserSessions`, as the account page and a password reset do.
 *
 * Audit rows stay when their user is deleted: they name the user by id (and username in detail).
 *
 * @example const { revoked } = await admin.disable(await admin.find('alice'), { actor: OPERATOR });
 */
import { isUuid } from '../accounts/user-store.js';
import type { NewUser, User, UserStore } from '../accounts/user-store.js';
import type { AuditContext } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../audit/records.js';
import type { Client } from '../generated/prisma/client.js';
import { grantCount } from '../oidc/authorized-apps.js';
import type { ApplicationRevoked } from '../oidc/authorized-apps.js';
import { revokeGrants } from '../oidc/grant-revocations.js';
import { endUserSessions } from '../oidc/session-end.js';
import type { SessionEnd } from '../oidc/session-end.js';
import { enqueueMail } from '../mail/mail-outbox.js';
import { NotFoundError } from './not-found.js';

export interface UserAdmin {
  /** A user named by id, or by username (any case); an argument shaped like a UUID is tried as an id first. */
  find(name: string): Promise<User>;
  /** Every user, by username. */
  list(): Promise<User[]>;
  /**
   * `emailVerified`: the operator vouches for the address (`email_verified` set). Otherwise, with
   * `verificationTtlMs` (mail is on), a verification mail is queued with the user.
   */
  create(input: NewUser, context: AuditContext, options?: { emailVerified?: boolean; verificationTtlMs?: number }): Promise<User>;
  /** `changed` false: the user was disabled already (nothing written). */
  disable(user: User, context: AuditContext): Promise<{ changed: boolean; revoked: ApplicationRevoked[] }>;
  /** `changed` false: the user was not disabled (nothing written). */
  enable(user: User, context: AuditContext): Promise<{ changed: boolean }>;
  delete(user: User, context: AuditContext): Promise<{ revoked: ApplicationRevoked[] }>;
  /** Sets a new password and ends every session of the user. */
  setPassword(user: User, password: string, context: AuditContext): Promise<void>;
  /**
   * Ends every session of the user: each browser signed in as them signs in again, the grants
   * those sessions made without offline_access end, and their applications are told (back-channel logout).
   */
  signOut(user: User, context: AuditContext): Promise<void>;
  /** Ends the user's grants (to `client` only, if given). */
  revokeTokens(user: User, context: AuditContext, client?: Client): Promise<ApplicationRevoked[]>;
}

export function createUserAdmin({ users, changes, sessions }: { users: UserStore; changes: ChangeTransaction; sessions: SessionEnd }): UserAdmin {
  /** The audit fields of an event about `user`: their id, and their username (rows outlive the user). */
  const about = (user: User, detail: Record<string, unknown> = {}) => ({ user: user.id, detail: { username: user.username, ...detail } });

  return {
    async find(name) {
      const user = (isUuid(name.toLowerCase()) ? await users.findById(name.toLowerCase()) : null) ?? await users.findByUsername(name);
      if (!user) throw new NotFoundError(`no user "${name}" (name a user by id or username)`);
      return user;
    },
    list: () => users.list(),
    async create(input, context, { emailVerified = false, verificationTtlMs } = {}) {
      const row = await users.prepare(input); // argon2 before the transaction, not inside it
      return changes(async (tx, record) => {
        const user = await users.insert({ ...row, emailVerified }, tx);
        await record.audit('user.created', about(user), context);
        if (emailVerified) await record.audit('user.email_verified', about(user, { by: 'operator' }), context);
        else if (verificationTtlMs !== undefined) {
          // Sent by the running service's mail worker (at its next start, in embedded mode).
          const now = new Date();
          await enqueueMail(tx, { kind: 'email_verification', recipient: user.email, userId: user.id }, new Date(now.getTime() + verificationTtlMs), now);
          await record.audit('user.email_verification_requested', about(user), context);
        }
        return user;
      });
    },
    disable(user, context) {
      return changes(async (tx, record) => {
        const now = new Date();
        const { count } = await tx.user.updateMany({ where: { id: user.id, disabledAt: null }, data: { disabledAt: now, sessionsEndedAt: now } });
        if (count === 0) return { changed: false, revoked: [] };
        const revoked = await revokeGrants(tx, record, { accountId: user.id }, context);
        await record.audit('user.disabled', about(user, { grants_revoked: grantCount(revoked) }), context);
        // Ended, not only refused: enabling the user again does not bring a session back.
        await record.audit('user.signed_out', about(user, { reason: 'disabled' }), context);
        await sessions.within(tx, record, { accountId: user.id }, 'disabled', context); // its grants ended above: this tells the applications
        return { changed: true, revoked };
      }).finally(() => sessions.wake());
    },
    enable(user, context) {
      return changes(async (tx, record) => {
        const { count } = await tx.user.updateMany({ where: { id: user.id, disabledAt: { not: null } }, data: { disabledAt: null } });
        if (count > 0) await record.audit('user.enabled', about(user), context);
        return { changed: count > 0 };
      });
    },
    delete(user, context) {
      return changes(async (tx, record) => {
        const revoked = await revokeGrants(tx, record, { accountId: user.id }, context);
        const { count } = await tx.user.deleteMany({ where: { id: user.id } });
        if (count === 0) throw new NotFoundError(`no user "${user.username}" (deleted meanwhile)`);
        await record.audit('user.deleted', about(user, { grants_revoked: grantCount(revoked) }), context);
        return { revoked };
      });
    },
    async setPassword(user, password, context) {
      const passwordHash = await users.hashNewPassword(password);
      await changes(async (tx, record) => {
        // A session taken with the old password (a stolen cookie) ends with it.
        const { count } = await tx.user.updateMany({ where: { id: user.id }, data: { passwordHash } });
        if (count === 0) throw new NotFoundError(`no user "${user.username}" (deleted meanwhile)`);
        await record.audit('user.password_set', about(user), context);
        await endUserSessions(sessions, tx, record, user, { reason: 'password_set' }, context);
      });
      sessions.wake();
    },
    async signOut(user, context) {
      await changes(async (tx, record) => {
        const { ended } = await endUserSessions(sessions, tx, record, user, { reason: 'sign_out' }, context);
        if (!ended) throw new NotFoundError(`no user "${user.username}" (deleted meanwhile)`);
      });
      sessions.wake();
    },
    revokeTokens(user, context, client) {
      return changes((tx, record) => revokeGrants(tx, record, { accountId: user.id, clientId: client?.clientId }, context));
    },
  };
}
