/**
 * The mail outbox and its worker. A request to mail someone is one row, written where the request
 * is made (in its transaction when it has one); the outbox worker of every instance
 * (outbox/worker.ts, as the webhooks' and the back-channel logouts') claims due rows with
 * `FOR UPDATE SKIP LOCKED` and a lease, sends each, and retries on the webhooks' schedule
 * (outbox/retry-schedule.ts) what the server did not take, until the row's `send_before`. A mail
 * being sent when the worker stops is sent to the end and recorded, never sent twice.
 *
 * A row holds no link. The worker makes each link's token as it sends (accounts/account-tokens.ts),
 * so no live token is stored anywhere but in the mail itself. A password reset's row holds the
 * address as typed: the request answers the same, as fast, whether or not it names anyone, and it
 * is the worker that looks (and applies the per-account budget).
 *
 * @example await enqueueMail(prisma, { kind: 'password_reset', recipient: 'alice@example.com' }, sendBefore, now); mail.wake();
 */
import { randomBytes } from 'node:crypto';
import { issueToken } from '../accounts/account-tokens.js';
import type { LinkPurpose } from '../accounts/account-tokens.js';
import type { User } from '../accounts/user-store.js';
import { SYSTEM } from '../audit/audit-log.js';
import type { Records } from '../audit/records.js';
import type { MailConfig } from '../config.js';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { Limiter } from '../store/limiter.js';
import { retryDelayMs } from '../outbox/retry-schedule.js';
import { tableLeases } from '../outbox/table-leases.js';
import { createOutboxWorker } from '../outbox/worker.js';
import type { Leases, OutboxWorker } from '../outbox/worker.js';
import { resetMail, verificationMail } from './messages.js';
import { PermanentMailError } from './transport.js';
import type { Mail, MailTransport } from './transport.js';

export type MailKind = 'password_reset' | 'email_verification';

/** A mail to send: a reset to the address typed, or a verification to a user's address. */
export type MailRequest = { kind: 'password_reset'; recipient: string } | { kind: 'email_verification'; recipient: string; userId: string };

export type MailWriter = Pick<Prisma.TransactionClient, 'mailMessage'>;

/** Queues `request`, to be sent before `sendBefore` (its link would be stale after). */
export async function enqueueMail(writer: MailWriter, request: MailRequest, sendBefore: Date, now: Date): Promise<void> {
  await writer.mailMessage.create({
    data: {
      id: `mail_${randomBytes(16).toString('base64url')}`, kind: request.kind, recipient: request.recipient,
      userId: request.kind === 'email_verification' ? request.userId : null, nextAttemptAt: now, sendBefore, createdAt: now,
    },
  });
}

interface Claimed { id: string; kind: MailKind; recipient: string; user_id: string | null; attempts: number; send_before: Date }

export interface MailWorkerDependencies {
  prisma: PrismaClient;
  transport: MailTransport;
  mail: MailConfig;
  baseUrl: string;
  clock: () => Date;
  /** Where a mail's sending or refusal is audited. */
  records: Pick<Records, 'alone'>;
  /** Reset mails an account may get (keyed by user id): over it, a request mails nothing. */
  resetsByAccount: Limiter;
  log: (error: unknown) => void;
  pollMs?: number;
}

/** `wake()`: a mail was just queued, look now. */
export type MailWorker = OutboxWorker;

/** The mail outbox's leases (outbox/worker.ts): due rows claimed with a lease, as the webhooks' are. */
export function mailLeases(prisma: PrismaClient): Leases<Claimed> {
  return {
    async claim(owner, limit, now, leaseUntil) {
      const rows = await prisma.$queryRaw<Claimed[]>`
        UPDATE mail_outbox m SET lease_owner = ${owner}, lease_expires_at = ${leaseUntil}
        FROM (
          SELECT id FROM mail_outbox
          WHERE status = 'pending' AND next_attempt_at <= ${now} AND (lease_expires_at IS NULL OR lease_expires_at <= ${now})
          ORDER BY next_attempt_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ) due
        WHERE m.id = due.id
        RETURNING m.id, m.kind, m.recipient, m.user_id, m.attempts, m.send_before`;
      return rows.map((row) => ({ ...row, attempts: Number(row.attempts), send_before: new Date(row.send_before) }));
    },
    ...tableLeases(prisma, 'mail_outbox'),
  };
}

export function createMailWorker(deps: MailWorkerDependencies): MailWorker {
  const { prisma, clock } = deps;

  /** Records how a claimed row ended, while `owner` still holds it. */
  const finish = (owner: string, id: string, data: Prisma.MailMessageUpdateManyMutationInput) =>
    prisma.mailMessage.updateMany({ where: { id, leaseOwner: owner }, data: { leaseOwner: null, leaseExpiresAt: null, ...data } });

  type Composed = { mail: Mail; users: User[]; purpose: LinkPurpose } | { status: 'no_account' | 'limited' };

  /** What to send for a claimed row, with the users it names; a status when nothing is. */
  async function compose(row: Claimed, now: Date): Promise<Composed> {
    const { passwordResetTtlMs, emailVerificationTtlMs } = deps.mail;
    if (row.kind === 'password_reset') {
      // Compared exactly but for case (no pattern: `_` and `%` are characters of an address).
      const ids = await prisma.$queryRaw<{ id: string }[]>`SELECT id FROM users WHERE lower(email) = lower(${row.recipient}) AND disabled_at IS NULL`;
      const users = await prisma.user.findMany({ where: { id: { in: ids.map(({ id }) => id) } }, orderBy: { username: 'asc' } });
      if (users.length === 0) return { status: 'no_account' } as const;
      // The per-account budget counts requests, not attempts: a retry is the same request.
      const allowed = row.attempts > 0 ? users : (await Promise.all(users.map(async (user) => ((await deps.resetsByAccount.consume(user.id)).exceeded ? undefined : user)))).filter((user) => user !== undefined);
      for (const user of users.filter((u) => !allowed.includes(u))) {
        await deps.records.alone((record) => record.audit('user.link_limited', { user: user.id, detail: { username: user.username, purpose: 'password_reset' } }, { actor: SYSTEM }));
      }
      if (allowed.length === 0) return { status: 'limited' } as const;
      const accounts = await Promise.all(allowed.map(async (user) => ({ user, username: user.username, token: await issueToken(prisma, user, 'password_reset', passwordResetTtlMs, now) })));
      // To the address as stored, not as typed.
      return { mail: resetMail(deps.baseUrl, allowed[0]!.email, accounts, passwordResetTtlMs), users: allowed, purpose: 'password_reset' } as const;
    }
    const user = row.user_id ? await prisma.user.findUnique({ where: { id: row.user_id } }) : null;
    if (!user || user.disabledAt || user.email !== row.recipient || user.emailVerified) return { status: 'no_account' } as const;
    const token = await issueToken(prisma, user, 'email_verification', emailVerificationTtlMs, now);
    return { mail: verificationMail(deps.baseUrl, row.recipient, user.username, token, emailVerificationTtlMs), users: [user], purpose: 'email_verification' } as const;
  }

  /** One attempt at a claimed row; not cut short by a stop (a mail half sent would be sent again). */
  async function attempt(row: Claimed, owner: string) {
    const now = clock();
    if (row.send_before <= now) {
      await finish(owner, row.id, { status: 'expired', nextAttemptAt: null });
      return;
    }
    try {
      const composed = await compose(row, now);
      if (!('mail' in composed)) {
        await finish(owner, row.id, { status: composed.status, nextAttemptAt: null });
        return;
      }
      await deps.transport.send(composed.mail);
      await finish(owner, row.id, { status: 'sent', sentAt: clock(), attempts: { increment: 1 }, nextAttemptAt: null, lastError: null });
      for (const user of composed.users) {
        await deps.records.alone((record) => record.audit('user.link_mailed', { user: user.id, detail: { username: user.username, purpose: composed.purpose } }, { actor: SYSTEM }));
      }
    } catch (error) {
      const delay = error instanceof PermanentMailError ? undefined : retryDelayMs(row.attempts + 1, deps.mail.retryBaseMs);
      const lastError = String((error as Error).message ?? error).slice(0, 500);
      const next = delay === undefined ? undefined : new Date(clock().getTime() + delay);
      await finish(owner, row.id, next && next < row.send_before
        ? { status: 'pending', attempts: { increment: 1 }, nextAttemptAt: next, lastError }
        : { status: 'failed', attempts: { increment: 1 }, nextAttemptAt: null, lastError });
      deps.log(error);
    }
  }

  const worker = createOutboxWorker<Claimed>({
    outbox: mailLeases(prisma),
    attempt,
    clock,
    log: deps.log,
    leaseMs: Math.max(6 * deps.mail.timeoutMs, 60_000),
    ...(deps.pollMs !== undefined ? { pollMs: deps.pollMs } : {}),
  });
  return {
    start: () => worker.start(),
    wake: () => worker.wake(),
    async stop() {
      await worker.stop();
      deps.transport.close();
    },
  };
}

/** How long sent (or given-up) mails and used or expired links are kept: enough to read what happened to a request. */
export const MAIL_LOG_DAYS = 7;

/**
 * One batch of the cleanup job (store/cleanup.ts `sweeps`): mails done with and links used or
 * expired more than {@link MAIL_LOG_DAYS} ago, at most `limit` rows of each; resolves to how many went.
 */
export async function deleteOldMail(prisma: PrismaClient, limit: number): Promise<number> {
  const mails = await prisma.$executeRaw`
    DELETE FROM mail_outbox WHERE id IN (
      SELECT id FROM mail_outbox WHERE status <> 'pending' AND created_at < now() - make_interval(days => ${MAIL_LOG_DAYS}::int)
      ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
  const links = await prisma.$executeRaw`
    DELETE FROM account_tokens WHERE digest IN (
      SELECT digest FROM account_tokens WHERE expires_at < now() - make_interval(days => ${MAIL_LOG_DAYS}::int)
      ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
  return Math.max(mails, links);
}
