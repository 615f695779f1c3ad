/**
 * The applications a user has authorized, read from the provider's grants, and the ending of
 * grants: a user revoking one application here, and an operator ending all of a user's or a
 * client's ({@link endGrants}). Every grant in scope ends with every code, access and refresh
 * token issued under it. Grants and tokens all live in `oidc_models` (adapter.ts), so one
 * statement deletes them together, in one transaction with the revocation's announcement.
 *
 * @example const apps = createAuthorizedApps({ prisma }); await apps.revoke(accountId, clientId);
 */
import { Prisma } from '../generated/prisma/client.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { isUuid } from '../accounts/user-store.js';
import { userActor } from '../audit/audit-log.js';
import type { AuditContext } from '../audit/audit-log.js';

export interface AuthorizedApp {
  clientId: string;
  clientName: string;
  /** Scopes granted, over all of the user's grants to the client. */
  scopes: string[];
  /** When the user first authorized the client (its oldest live grant). */
  authorizedAt: Date;
}

/** What a revocation ended for one user and one client; announced to the client as `token.revoked`. */
export interface ApplicationRevoked {
  clientId: string;
  clientName: string;
  accountId: string;
  /** Read in the revocation's transaction (a lookup outside it would wait on it under PGlite). */
  username: string | undefined;
  grantIds: string[];
}

export interface AuthorizedApps {
  /** The clients holding a live grant from the account, by name. */
  list(accountId: string): Promise<AuthorizedApp[]>;
  /**
   * Ends the account's grants to the client; resolves to their ids (none: nothing was
   * authorized). `context`: who asked, for the audit trail (default: the user).
   */
  revoke(accountId: string, clientId: string, context?: AuditContext): Promise<string[]>;
}

/** How many grants a revocation ended, over all its users and clients. */
export const grantCount = (ended: readonly ApplicationRevoked[]) => ended.reduce((sum, entry) => sum + entry.grantIds.length, 0);

/**
 * Whose grants end: one user's, one client's, or one user's to one client; or the grants named,
 * those with offline_access excepted (a login session's, ending with it: session-end.ts).
 * `keepOffline`: of a user's or a client's, only those without offline_access (every session of
 * a user ended by a password reset or "sign out everywhere": session-end.ts `endUserSessions`).
 */
export type GrantScope = (({ accountId: string; clientId?: string; grantIds?: undefined } | { accountId?: string; clientId: string; grantIds?: undefined }) & { keepOffline?: boolean })
  | { grantIds: string[]; accountId?: undefined; clientId?: undefined; keepOffline?: undefined };

/** A grant's OpenID scope holds offline_access (OpenID Connect Core §11). */
const OFFLINE = "(' ' || COALESCE(payload #>> '{openid,scope}', '') || ' ') LIKE '% offline_access %'";

/** Records what a revocation ended, inside the revocation's transaction. */
export type AnnounceRevocation = (event: ApplicationRevoked, context: AuditContext) => Promise<void>;

/**
 * Runs a revocation in one transaction with its announcement (the webhooks' `token.revoked`
 * outbox rows): no grant ends unannounced, and no announcement outlives a rolled-back change.
 */
export type RevocationTransaction = <T>(change: (tx: Prisma.TransactionClient, announce: AnnounceRevocation) => Promise<T>) => Promise<T>;

export interface AuthorizedAppsDependencies {
  prisma: PrismaClient;
  /** Where revocations are announced; without it they are not announced. */
  withEvents?: RevocationTransaction;
}

interface GrantRow { client_id: string; client_name: string; scope: string | null; iat: number | null }

/**
 * Ends every grant in `scope` and every token issued under them, in one statement within `tx`.
 * Resolves to one entry per client and user whose grants ended (names read in `tx`).
 */
export async function endGrants(tx: Prisma.TransactionClient, scope: GrantScope): Promise<ApplicationRevoked[]> {
  const conditions = [
    Prisma.sql`type = 'Grant'`,
    ...(scope.accountId === undefined ? [] : [Prisma.sql`payload->>'accountId' = ${scope.accountId}`]),
    ...(scope.clientId === undefined ? [] : [Prisma.sql`payload->>'clientId' = ${scope.clientId}`]),
    ...(scope.grantIds === undefined ? [] : [Prisma.sql`id = ANY (${scope.grantIds}::text[])`, Prisma.raw(`NOT ${OFFLINE}`)]),
    ...(scope.keepOffline ? [Prisma.raw(`NOT ${OFFLINE}`)] : []),
  ];
  const rows = await tx.$queryRaw<{ id: string; account_id: string; client_id: string }[]>`
    WITH grants AS (
      SELECT id, payload->>'accountId' AS account_id, payload->>'clientId' AS client_id
      FROM oidc_models WHERE ${Prisma.join(conditions, ' AND ')}
    ), tokens AS (
      DELETE FROM oidc_models WHERE grant_id IN (SELECT id FROM grants) RETURNING 1
    )
    DELETE FROM oidc_models m USING grants g WHERE m.type = 'Grant' AND m.id = g.id
    RETURNING m.id, g.account_id, g.client_id`;
  if (rows.length === 0) return [];
  const clients = await tx.client.findMany({ where: { clientId: { in: [...new Set(rows.map((row) => row.client_id))] } }, select: { clientId: true, clientName: true } });
  const users = await tx.user.findMany({ where: { id: { in: [...new Set(rows.map((row) => row.account_id))].filter(isUuid) } }, select: { id: true, username: true } });
  const names = new Map(clients.map((client) => [client.clientId, client.clientName]));
  const usernames = new Map(users.map((user) => [user.id, user.username]));
  const ended = new Map<string, ApplicationRevoked>();
  for (const row of rows) {
    const key = `${row.client_id}\0${row.account_id}`;
    const entry = ended.get(key) ?? {
      clientId: row.client_id, clientName: names.get(row.client_id) ?? row.client_id, accountId: row.account_id, username: usernames.get(row.account_id), grantIds: [],
    };
    entry.grantIds.push(row.id);
    ended.set(key, entry);
  }
  for (const entry of ended.values()) entry.grantIds.sort();
  return [...ended.values()];
}

export function createAuthorizedApps({ prisma, withEvents }: AuthorizedAppsDependencies): AuthorizedApps {
  const inTransaction: RevocationTransaction = withEvents ?? ((change) => prisma.$transaction((tx) => change(tx, async () => {})));
  return {
    async list(accountId) {
      // A grant of a client that no longer exists cannot be used (the client is unknown to the
      // provider), so it is not listed. A client known by its metadata document (a client_id
      // that is an https URL) has no row: it is listed by that URL. Its scopes are the
      // profile's and every resource server's the grant holds (RFC 8707).
      const rows = await prisma.$queryRaw<GrantRow[]>`
        SELECT g.payload->>'clientId' AS client_id, COALESCE(c.client_name, g.payload->>'clientId') AS client_name,
               concat_ws(' ', g.payload #>> '{openid,scope}', (SELECT string_agg(r.value, ' ') FROM jsonb_each_text(COALESCE(g.payload->'resources', '{}')) r)) AS scope,
               (g.payload->>'iat')::float8 AS iat
        FROM oidc_models g LEFT JOIN clients c ON c.client_id = g.payload->>'clientId'
        WHERE g.type = 'Grant' AND g.payload->>'accountId' = ${accountId}
          AND (c.client_id IS NOT NULL OR g.payload->>'clientId' LIKE 'https://%')
          AND (g.expires_at IS NULL OR g.expires_at > now())`;
      const apps = new Map<string, AuthorizedApp>();
      for (const row of rows) {
        const app = apps.get(row.client_id) ?? { clientId: row.client_id, clientName: row.client_name, scopes: [], authorizedAt: new Date(8.64e15) };
        app.scopes = [...new Set([...app.scopes, ...(row.scope ?? '').split(' ').filter(Boolean)])];
        const at = new Date((row.iat ?? 0) * 1000);
        if (at < app.authorizedAt) app.authorizedAt = at;
        apps.set(row.client_id, app);
      }
      return [...apps.values()].sort((a, b) => a.clientName.localeCompare(b.clientName) || a.clientId.localeCompare(b.clientId));
    },

    revoke(accountId, clientId, context = { actor: userActor(accountId) }) {
      return inTransaction(async (tx, announce) => {
        const [ended] = await endGrants(tx, { accountId, clientId });
        if (!ended) return [];
        await announce(ended, context);
        return ended.grantIds;
      });
    },
  };
}
