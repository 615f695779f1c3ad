/**
 * The applications a user has authorized, read from the provider's grants, and the user's
 * revocation of one: every grant the user gave that client ends, with every code, access and
 * refresh token issued under it. Grants and tokens all live in `oidc_models` (adapter.ts), so
 * one statement deletes them together.
 *
 * @example const apps = createAuthorizedApps({ prisma }); await apps.revoke(accountId, clientId);
 */
import type { PrismaClient } from '../generated/prisma/client.js';

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
  accountId: string;
  grantIds: string[];
}

export interface AuthorizedApps {
  /** The clients holding a live grant from the account, by name. */
  list(accountId: string): Promise<AuthorizedApp[]>;
  /** Ends the account's grants to the client; resolves to their ids (none: nothing was authorized). */
  revoke(accountId: string, clientId: string): Promise<string[]>;
}

export interface AuthorizedAppsDependencies {
  prisma: PrismaClient;
  /** Told after every revocation that ended at least one grant. */
  onApplicationRevoked?: (event: ApplicationRevoked) => Promise<void> | void;
}

interface GrantRow { client_id: string; client_name: string; scope: string | null; iat: number | null }

export function createAuthorizedApps({ prisma, onApplicationRevoked }: AuthorizedAppsDependencies): AuthorizedApps {
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

    async revoke(accountId, clientId) {
      const rows = await prisma.$queryRaw<{ id: string }[]>`
        WITH grants AS (
          SELECT id FROM oidc_models
          WHERE type = 'Grant' AND payload->>'accountId' = ${accountId} AND payload->>'clientId' = ${clientId}
        ), tokens AS (
          DELETE FROM oidc_models WHERE grant_id IN (SELECT id FROM grants) RETURNING 1
        )
        DELETE FROM oidc_models WHERE type = 'Grant' AND id IN (SELECT id FROM grants) RETURNING id`;
      const grantIds = rows.map((row) => row.id);
      if (grantIds.length > 0) await onApplicationRevoked?.({ clientId, accountId, grantIds });
      return grantIds;
    },
  };
}
