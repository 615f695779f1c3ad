/**
 * Back-channel logout deliveries (OpenID Connect Back-Channel Logout 1.0 §2.5): a durable outbox
 * of its own (`backchannel_logouts`, one message a client to tell), sent by the webhook delivery
 * worker, so with the webhooks' leases, retry schedule (outbox/retry-schedule.ts: the first retry after
 * about WEBHOOK_RETRY_BASE_MS) and outbound guard (WEBHOOK_ALLOW_PRIVATE_NETWORKS). Each attempt
 * POSTs `logout_token=<JWT>` as a form (§2.5), the token signed afresh by `logoutToken` (its
 * `iat`, `exp` and `jti` are the attempt's). 2xx delivered; anything else (410 included: a client
 * has no endpoint to disable) retried, then failed.
 *
 * Messages are written by whoever ends a session (oidc/session-end.ts), in its transaction.
 *
 * @example const logouts = createBackchannelLogouts({ prisma, clock, policy, retryBaseMs, log, logoutToken });
 *          await logouts.enqueue(tx, [{ clientId, url, accountId, sid }], new Date()); logouts.wake();
 */
import { randomBytes } from 'node:crypto';
import type { PrismaClient } from '../generated/prisma/client.js';
import { tableLeases } from '../outbox/table-leases.js';
import type { NetworkPolicy } from '../outbound/ssrf-guard.js';
import { createDeliveryWorker } from './delivery.js';
import type { DeliveryWorker, Message } from './delivery.js';
import type { Outbox, Writer } from './outbox.js';
import { sendAttempt } from './send.js';
import { PENDING } from './webhook-store.js';

/** One client to tell that a session ended. */
export interface LogoutMessage {
  clientId: string;
  /** Its backchannel_logout_uri when the session ended. */
  url: string;
  accountId: string;
  sid: string | null;
}

type ClaimedLogout = Message & LogoutMessage;

export interface BackchannelLogouts {
  /** Writes the messages with the caller's change (`writer` its transaction). */
  enqueue(writer: Writer, messages: readonly LogoutMessage[], now: Date): Promise<void>;
  /** Runs a delivery cycle now (messages were just committed). */
  wake(): void;
  start(): void;
  stop(): Promise<void>;
}

export interface BackchannelLogoutDependencies {
  prisma: PrismaClient;
  clock: () => Date;
  policy: NetworkPolicy;
  retryBaseMs: number;
  log: (error: unknown) => void;
  /** The signed logout token of one message (oidc/logout-token.ts). */
  logoutToken: (message: LogoutMessage) => Promise<string>;
  attemptTimeoutMs?: number;
  leaseMs?: number;
  pollMs?: number;
  onOutcome?: (status: 'delivered' | 'gone' | 'failed' | 'pending') => void;
}

const newId = () => `bcl_${randomBytes(16).toString('base64url')}`;

/** Writes logout messages with the caller's change (`writer` its transaction); any process's worker sends them (the CLI's too: it has none, the service's polls). */
export async function enqueueLogouts(writer: Writer, messages: readonly LogoutMessage[], now: Date): Promise<void> {
  if (messages.length === 0) return;
  await writer.backchannelLogout.createMany({
    data: messages.map((m) => ({ id: newId(), clientId: m.clientId, url: m.url, accountId: m.accountId, sid: m.sid, nextAttemptAt: now, createdAt: now })),
  });
}

/** The outbox of logout messages, claimed and recorded as webhook messages are (outbox.ts). */
export function logoutOutbox(prisma: PrismaClient): Outbox<ClaimedLogout> {
  return {
    async claim(owner, limit, now, leaseUntil) {
      const rows = await prisma.$queryRaw<{ id: string; url: string; client_id: string; account_id: string; sid: string | null; attempts: number }[]>`
        UPDATE backchannel_logouts b
        SET lease_owner = ${owner}, lease_expires_at = ${leaseUntil}
        FROM (
          SELECT id FROM backchannel_logouts
          WHERE status = 'pending' AND next_attempt_at <= ${now}
            AND (lease_expires_at IS NULL OR lease_expires_at <= ${now})
          ORDER BY next_attempt_at
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ) due
        WHERE b.id = due.id
        RETURNING b.id, b.url, b.client_id, b.account_id, b.sid, b.attempts`;
      return rows.map((row) => ({ id: row.id, url: row.url, clientId: row.client_id, accountId: row.account_id, sid: row.sid, attempts: Number(row.attempts) }));
    },
    async record(owner, id, outcome, at) {
      const held = { id, leaseOwner: owner, status: PENDING };
      const common = { attempts: { increment: 1 }, lastAttemptAt: at, leaseOwner: null, leaseExpiresAt: null };
      if (outcome.status === 'delivered') {
        await prisma.backchannelLogout.updateMany({ where: held, data: { ...common, status: 'delivered', deliveredAt: at, nextAttemptAt: null, lastStatusCode: outcome.statusCode, lastError: null } });
        return;
      }
      const error = outcome.status === 'gone' ? 'the endpoint answered 410 Gone' : outcome.error;
      await prisma.backchannelLogout.updateMany({
        where: held,
        data: {
          ...common, status: outcome.status === 'pending' ? 'pending' : 'failed', lastStatusCode: outcome.statusCode, lastError: error.slice(0, 500),
          nextAttemptAt: outcome.status === 'pending' ? outcome.nextAttemptAt : null,
        },
      });
    },
    ...tableLeases(prisma, 'backchannel_logouts'),
  };
}

export function createBackchannelLogouts(deps: BackchannelLogoutDependencies): BackchannelLogouts {
  const worker: DeliveryWorker = createDeliveryWorker<ClaimedLogout>({
    outbox: logoutOutbox(deps.prisma),
    clock: deps.clock,
    policy: deps.policy,
    retryBaseMs: deps.retryBaseMs,
    send: sendAttempt,
    log: deps.log,
    // §2.5: the token in a form body; a 410 is not a webhook's "stop sending" here (outcomeOf → failed above).
    prepare: async (message) => ({
      url: message.url,
      body: new URLSearchParams({ logout_token: await deps.logoutToken(message) }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    }),
    ...(deps.onOutcome ? { onOutcome: deps.onOutcome } : {}),
    ...(deps.pollMs ? { pollMs: deps.pollMs } : {}),
    ...(deps.attemptTimeoutMs ? { attemptTimeoutMs: deps.attemptTimeoutMs } : {}),
    ...(deps.leaseMs ? { leaseMs: deps.leaseMs } : {}),
  });
  return {
    enqueue: enqueueLogouts,
    wake: () => worker.wake(),
    start: () => worker.start(),
    stop: () => worker.stop(),
  };
}
