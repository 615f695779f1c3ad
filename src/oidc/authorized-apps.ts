/**
 * The applications a user has authorized, read from the provider's grants, and the user's
 * revocation of one: every grant the user gave that client ends, with every code, access and
 * refresh token issued under it. Grants and tokens all live in `oidc_models` (adapter.ts), so
 * one statement deletes them together, in one transaction with the revocation's announcement.
 *
 * @example const apps = createAuthorizedApps({ prisma }); await apps.revoke(accountId, clientId);
 */
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';

export interface AuthorizedApp {
  clientId: string;
  clientName: string;
  /** Scopes granted, over all of the user's grants to the client. */
  scopes: string[];
  /** When the user first authorized the client (its oldest live grant). */
  authorizedAt: Date;
}

/** What a revocation ended; webhooks announce it to the client as `token.revoked`. */
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
  /** Ends the account's grants to the client; resolves to their ids (none: nothing was authorized). */
  revoke(accountId: string, clientId: string): Promise<string[]>;
}

/** Records what a revocation ended, inside the revocation's transaction. */
export type AnnounceRevocation = (event: ApplicationRevoked) => Promise<void>;

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

export function createAuthorizedApps({ prisma, withEvents }: AuthorizedAppsDependencies): AuthorizedApps {
  const inTransaction: RevocationTransaction = withEvents ?? ((change) => prisma.$transaction((tx) => change(tx, async () => {})));
  return {
    async list(accountId) {
      // A grant of a client that no longer exists cannot be used (the client is unknown to the
      // provider), so it is not listed.
      const rows = await prisma.$queryRaw<GrantRow[]>`
        SELECT g.payload->>'clientId' AS client_id, c.client_name,
               g.payload #>> '{openid,scope}' AS scope, (g.payload->>'iat')::float8 AS iat
        FROM oidc_models g JOIN clients c ON c.client_id = g.payload->>'clientId'
        WHERE g.type = 'Grant' AND g.payload->>'accountId' = ${accountId}
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

    revoke(accountId, clientId) {
      return inTransaction(async (tx, announce) => {
        const rows = await tx.$queryRaw<{ id: string }[]>`
          WITH grants AS (
            SELECT id FROM oidc_models
            WHERE type = 'Grant' AND payload->>'accountId' = ${accountId} AND payload->>'clientId' = ${clientId}
          ), tokens AS (
            DELETE FROM oidc_models WHERE grant_id IN (SELECT id FROM grants) RETURNING 1
          )
          DELETE FROM oidc_models WHERE type = 'Grant' AND id IN (SELECT id FROM grants) RETURNING id`;
        const grantIds = rows.map((row) => row.id);
        if (grantIds.length === 0) return grantIds;
        const client = await tx.client.findUnique({ where: { clientId }, select: { clientName: true } });
        const user = await tx.user.findUnique({ where: { id: accountId }, select: { username: true } });
        await announce({ clientId, clientName: client?.clientName ?? clientId, accountId, username: user?.username, grantIds });
        return grantIds;
      });
    },
  };
}
