/**
 * What a CLI command works on: the service's database (DATABASE_URL, or the embedded one in
 * DATA_DIR, which only one process may hold: stop the server first), migrated, and the same
 * stores, webhook outbox and audit writer the service uses, opened for one command and closed
 * after it. Webhook events are only written here; the running service's worker sends them (the
 * embedded one once it starts again). Audit lines go to stderr, so stdout stays the command's.
 *
 * @example const user = await withAdmin(io, (admin) => admin.users.find('alice'));
 */
import { createUserStore } from '../accounts/user-store.js';
import type { User } from '../accounts/user-store.js';
import { createUserAdmin } from '../admin/user-admin.js';
import type { UserAdmin } from '../admin/user-admin.js';
import { createClientAdmin } from '../admin/client-admin.js';
import type { ClientAdmin } from '../admin/client-admin.js';
import { createAuditLog } from '../audit/audit-log.js';
import { createRecords } from '../audit/records.js';
import type { Records } from '../audit/records.js';
import { NO_METRICS } from '../ops/metrics.js';
import type { AuditLog } from '../audit/audit-log.js';
import { createClientSettings } from '../clients/client-settings.js';
import { createClientStore } from '../clients/client-store.js';
import { loadConfig } from '../config.js';
import type { Config } from '../config.js';
import type { Client, PrismaClient } from '../generated/prisma/client.js';
import { createAuthorizedApps } from '../oidc/authorized-apps.js';
import type { AuthorizedApps } from '../oidc/authorized-apps.js';
import { createLogger } from '../ops/logger.js';
import type { Logger } from '../ops/logger.js';
import { openDatabase } from '../store/database.js';
import type { Database } from '../store/database.js';
import { migrate } from '../store/migrate.js';
import { errorChain, isStoreFailure } from '../store/store-failure.js';
import { createResourceStore } from '../resources/resource-store.js';
import { checkedResources } from '../resources/resource-declaration.js';
import type { ResourceStore } from '../resources/resource-store.js';
import { createWebhookService } from '../webhooks/webhook-service.js';
import { enqueueLogouts } from '../webhooks/backchannel-logouts.js';
import { createSessionEnd } from '../oidc/session-end.js';
import { createWriteSender } from '../store/write-sender.js';
import { outboundPolicies } from '../outbound/policies.js';
import { urlProblem } from '../outbound/ssrf-guard.js';
import type { CliIo, CliOutput } from './verb.js';

/**
 * The database could not serve the command: unreachable or refusing, a failed migration, or a
 * change that outlasted ADMIN_TRANSACTION_TIMEOUT_MS (rolled back: nothing changed).
 */
export class DatabaseError extends Error {
  override name = 'DatabaseError';
}

/** What the database or the driver said: the innermost message's last line, without Prisma's invocation preamble. */
function reasonOf(error: unknown): string {
  let reason = String(error);
  for (const { message } of errorChain(error)) {
    const lines = typeof message === 'string' ? message.split('\n').map((line) => line.trim()).filter(Boolean) : [];
    if (lines.length > 0) reason = lines.at(-1)!;
  }
  return reason;
}

/** Prisma's "Transaction API error" (P2028): the transaction expired, or never started, and was rolled back. */
const unfinished = (error: unknown) => (error as { code?: unknown }).code === 'P2028';

export interface Admin {
  readonly users: UserAdmin;
  readonly clients: ClientAdmin;
  readonly apps: AuthorizedApps;
  /** Declared resource servers (RESOURCES and resources:add). */
  readonly resources: ResourceStore;
  /** For reads the admin services do not cover (the audit trail). */
  readonly prisma: PrismaClient;
}

/** Where a command runs: the environment it reads and the stderr its audit lines go to. */
export type CommandIo = Pick<CliIo, 'env' | 'stderr'>;

/** Opens the database for one command; `migrated: false` leaves the migrations to the command (db:migrate). */
export async function withDatabase<T>(
  io: CommandIo,
  use: (db: Database) => Promise<T>,
  { migrated = true, config = loadConfig(io.env) }: { migrated?: boolean; config?: Config } = {},
): Promise<T> {
  // RESOURCES held to what a resource server may be, as the service does at start (a ConfigError naming it).
  checkedResources(config.standardClients.resources);
  const db = await openDatabase(config);
  try {
    try {
      await (migrated ? db.withConnection((sql) => migrate(sql)) : db.ping());
    } catch (error) {
      throw new DatabaseError(`cannot use the database: ${(error as Error).message}`, { cause: error });
    }
    try {
      return await use(db);
    } catch (error) {
      if (!unfinished(error) && isStoreFailure(error)) {
        throw new DatabaseError(`the database did not answer (${reasonOf(error)}; DATABASE_STATEMENT_TIMEOUT_MS is ${config.timeouts.databaseStatementMs} ms): `
          + 'a change in progress is not confirmed; users:show, clients:show or audit:list tell whether it was made', { cause: error });
      }
      if (!unfinished(error)) throw error;
      const reason = /Transaction API error: [^\n]*/.exec((error as Error).message)?.[0] ?? (error as Error).message;
      throw new DatabaseError(`the change was rolled back, nothing changed (ADMIN_TRANSACTION_TIMEOUT_MS is ${config.timeouts.adminTransactionMs} ms): ${reason}`, { cause: error });
    }
  } finally {
    await db.close();
  }
}

/** A command's audit writer: rows in its transactions, lines on stderr (stdout stays the command's). */
function operatorAudit(config: Config, stderr: CliOutput): { audit: AuditLog; logger: Logger } {
  const logger = createLogger({ level: config.logLevel, pretty: Boolean(stderr.isTTY), destination: stderr });
  return { audit: createAuditLog({ logger }), logger };
}

/**
 * A command's records (audit/records.ts): its changes made in transactions of at most
 * ADMIN_TRANSACTION_TIMEOUT_MS, their audit lines on stderr, their webhook events left in the
 * outbox for the running service's worker.
 */
export function operatorRecords(db: Database, config: Config, stderr: CliOutput): Records {
  const { prisma } = db;
  const { audit, logger } = operatorAudit(config, stderr);
  const webhooks = createWebhookService({ // its worker is never started here
    prisma,
    clock: () => new Date(),
    policy: outboundPolicies(config).webhooks,
    retryBaseMs: config.webhookRetryBaseMs,
    log: (error) => logger.error({ err: error }, 'error'),
  });
  return createRecords({
    transaction: (run, options) => prisma.$transaction(run, options), audit, webhooks, metrics: NO_METRICS,
    send: createWriteSender(db.sql, { byTurn: false }), timeoutMs: config.timeouts.adminTransactionMs,
  });
}

export function withAdmin<T>(io: CommandIo, use: (admin: Admin) => Promise<T>): Promise<T> {
  const config = loadConfig(io.env);
  return withDatabase(io, (db) => {
    const { prisma } = db;
    const users = createUserStore(prisma);
    const { change: changes } = operatorRecords(db, config, io.stderr);
    return use({
      // Back-channel logouts are written to the outbox; the running service's worker sends them.
      users: createUserAdmin({ users, changes, sessions: createSessionEnd({ changes, logouts: { enqueue: enqueueLogouts, wake: () => {} } }) }),
      clients: createClientAdmin({ prisma, clients: createClientStore(prisma, changes, { backchannelDestination: (uri) => urlProblem(uri, outboundPolicies(config).webhooks) }), settings: createClientSettings(changes, { graceMs: config.secretRotationGraceMs, rules: { backchannelDestination: (uri) => urlProblem(uri, outboundPolicies(config).webhooks) } }), changes }),
      apps: createAuthorizedApps({ prisma }),
      resources: createResourceStore({ prisma, configured: config.standardClients.resources, changes }),
      prisma,
    });
  }, { config });
}

/** Runs `act` on the user named `name` (id or username), on an open database. */
export function withUser<T>(io: CommandIo, name: string, act: (admin: Admin, user: User) => Promise<T>): Promise<T> {
  return withAdmin(io, async (admin) => act(admin, await admin.users.find(name)));
}

/** Runs `act` on the client named by `clientId`, on an open database. */
export function withClient<T>(io: CommandIo, clientId: string, act: (admin: Admin, client: Client) => Promise<T>): Promise<T> {
  return withAdmin(io, async (admin) => act(admin, await admin.clients.find(clientId)));
}
