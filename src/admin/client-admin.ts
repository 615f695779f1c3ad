/**
 * What an operator does to clients (the CLI's `clients:*` and `tokens:revoke --client`). Each
 * change is one transaction with its audit rows (and its webhook events: client-settings.ts).
 *
 * Deleting a client ends every grant and token it holds, with a `token.revoked` event
 * (`admin_revoked`) per grant for its subscribed endpoints and one `token.revoked` audit row per
 * user, then deletes it. Its endpoints outlive it without a client (client_id NULL) until what
 * they have pending is delivered, then the cleanup job removes them (docs/decisions.md).
 *
 * @example await admin.delete(await admin.find(clientId), { actor: OPERATOR });
 */
import type { AuditContext } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../audit/records.js';
import type { ClientSettings } from '../clients/client-settings.js';
import type { ClientStore } from '../clients/client-store.js';
import type { RegisteredMetadata } from '../clients/client-metadata.js';
import type { Client, PrismaClient } from '../generated/prisma/client.js';
import { grantCount } from '../oidc/authorized-apps.js';
import type { ApplicationRevoked } from '../oidc/authorized-apps.js';
import { revokeGrants } from '../oidc/grant-revocations.js';
import type { WebhookEndpoint } from '../webhooks/webhook-store.js';
import { NotFoundError } from './not-found.js';

export interface ClientAdmin {
  /** A client an operator vouches for (registration `operator`), in the spec's shape: its secret, shown this once. */
  create(input: { clientName: string; redirectUri: string; postLogoutRedirectUri?: string | undefined; backchannelLogoutUri?: string | undefined }, context: AuditContext): Promise<{ client: Client; clientSecret: string }>;
  /** A client an operator vouches for, described by its metadata (grant types, keys): its secret, if it has one, shown this once. */
  createDescribed(metadata: RegisteredMetadata, context: AuditContext): Promise<{ client: Client; clientSecret: string | undefined }>;
  /** Its keys (private_key_jwt) from now on; its secrets end. */
  setKeys(client: Client, keys: Record<string, unknown>, context: AuditContext): Promise<{ client: Client; changed: string[] }>;
  /** A client by its client_id (exactly). */
  find(clientId: string): Promise<Client>;
  /** Every client, by name, with how many webhook endpoints it has. */
  list(): Promise<(Client & { webhookCount: number })[]>;
  /** Its webhook endpoints, and how many users hold a live grant to it. */
  details(client: Client): Promise<{ endpoints: WebhookEndpoint[]; authorizedUsers: number }>;
  delete(client: Client, context: AuditContext): Promise<{ revoked: ApplicationRevoked[] }>;
  /**
   * The new secret, to be shown this once, and the client as it now is: the replaced secret works
   * until its `previousSecretExpiresAt` (`graceMs` from now; CLIENT_SECRET_ROTATION_GRACE unless given).
   */
  rotateSecret(client: Client, context: AuditContext, graceMs?: number): Promise<{ clientSecret: string; client: Client }>;
  /** Ends the previous secret's grace now; `ended` false when none was still working. */
  endPreviousSecret(client: Client, context: AuditContext): Promise<{ ended: boolean; client: Client }>;
  /** Validated as at registration; `changed` false when it was that already. */
  setRedirectUri(client: Client, redirectUri: string, context: AuditContext): Promise<{ changed: boolean }>;
  revokeTokens(client: Client, context: AuditContext): Promise<ApplicationRevoked[]>;
}

export interface ClientAdminDependencies {
  prisma: PrismaClient;
  clients: ClientStore;
  settings: ClientSettings;
  changes: ChangeTransaction;
}

export function createClientAdmin({ prisma, clients, settings, changes }: ClientAdminDependencies): ClientAdmin {
  return {
    create(input, context) {
      return clients.register(input, context, 'operator');
    },
    createDescribed(metadata, context) {
      return clients.registerDynamic(metadata, context, 'operator');
    },
    setKeys(client, keys, context) {
      return settings.setKeys(client.clientId, keys, context);
    },
    async find(clientId) {
      const client = await prisma.client.findUnique({ where: { clientId } });
      if (!client) throw new NotFoundError(`no client "${clientId}" (name a client by its client_id)`);
      return client;
    },
    async list() {
      const clients = await prisma.client.findMany({ orderBy: [{ clientName: 'asc' }, { clientId: 'asc' }], include: { _count: { select: { webhookEndpoints: true } } } });
      return clients.map(({ _count, ...client }) => ({ ...client, webhookCount: _count.webhookEndpoints }));
    },
    async details(client) {
      const endpoints = await prisma.webhookEndpoint.findMany({ where: { clientId: client.clientId }, orderBy: { createdAt: 'asc' } });
      const [row] = await prisma.$queryRaw<{ users: number }[]>`
        SELECT count(DISTINCT payload->>'accountId')::int AS users FROM oidc_models
        WHERE type = 'Grant' AND payload->>'clientId' = ${client.clientId} AND (expires_at IS NULL OR expires_at > now())`;
      return { endpoints, authorizedUsers: row?.users ?? 0 };
    },
    delete(client, context) {
      return changes(async (tx, record) => {
        // The events are written while the client still owns its endpoints; the endpoints then outlive it.
        const revoked = await revokeGrants(tx, record, { clientId: client.clientId }, context);
        const { count } = await tx.client.deleteMany({ where: { clientId: client.clientId } });
        if (count === 0) throw new NotFoundError(`no client "${client.clientId}" (deleted meanwhile)`);
        await record.audit('client.deleted', { client: client.clientId, detail: { client_name: client.clientName, grants_revoked: grantCount(revoked) } }, context);
        return { revoked };
      });
    },
    rotateSecret(client, context, graceMs) {
      return settings.rotateSecret(client.clientId, context, graceMs === undefined ? {} : { graceMs });
    },
    endPreviousSecret(client, context) {
      return settings.endPreviousSecret(client.clientId, context);
    },
    async setRedirectUri(client, redirectUri, context) {
      const { changed } = await settings.update(client.clientId, { redirectUri }, context);
      return { changed: changed.length > 0 };
    },
    revokeTokens(client, context) {
      return changes((tx, record) => revokeGrants(tx, record, { clientId: client.clientId }, context));
    },
  };
}
