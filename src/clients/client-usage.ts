/**
 * When a self-registered (RFC 7591) client last obtained tokens, `clients.last_used_at`, so
 * that the cleanup job can remove those unused for DYNAMIC_CLIENT_IDLE_DAYS (idle-clients.ts):
 * every install of an MCP client registers anew, and the ones thrown away would pile up.
 *
 * Written at most once a day per client and never in a round trip of its own: a code exchange or
 * refresh whose client row (already read with its code or refresh token, store/hot-reads.ts)
 * says it was last used over a day ago adds one UPDATE to the request's write statement
 * (store/write-batch.ts), which its tokens go out in anyway, and which only commits with them.
 * The spec's clients are never written.
 *
 * @example const usage = clientUsage({ provider, findClient, joinRequestWrites, log }); koa.use(usage.settle);
 */
import type { Middleware } from 'koa';
import type Provider from 'oidc-provider';
import type { Client } from '../generated/prisma/client.js';
import { eventWork } from '../oidc/event-work.js';
import type { EventWorkLog } from '../oidc/event-work.js';
import type { Merged, Write } from '../store/write-batch.js';
import { isWellFormedClientId } from './secret.js';

/** How old a last use may be before a token request records a new one. */
export const LAST_USED_RESOLUTION_MS = 24 * 3600 * 1000;

const LAST_USED: Omit<Merged, 'values'> = {
  key: 'clients_last_used',
  columns: ['client_id'],
  sql: (v, ok) => `UPDATE clients c SET last_used_at = now() FROM ${v} WHERE c.client_id = v.client_id AND ${ok} RETURNING 1`,
};

/** The UPDATE that records a use of `clientId`, as a write of a request's statement. */
export function lastUsedWrite(clientId: string): Write {
  return {
    rows: () => [`clients:${clientId}`], // two requests' updates of one row never share a statement
    merged: { ...LAST_USED, values: (p) => [[`${p(clientId)}::text`]] },
  };
}

/** Whether a use now should be recorded for `client` (self-registered, last recorded over a day ago). */
export function useToRecord(client: Pick<Client, 'registration' | 'lastUsedAt'> | null, now = Date.now()): boolean {
  if (client?.registration !== 'rfc7591') return false;
  return client.lastUsedAt === null || now - client.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS;
}

export interface ClientUsageDependencies {
  provider: Provider;
  /** The client row, as this request already read it. */
  findClient: (clientId: string) => Promise<Client | null>;
  /** Adds a write to the current request's one write statement; false when no request is running. */
  joinRequestWrites: (key: string, write: Write) => boolean;
  log: EventWorkLog;
}

export function clientUsage({ provider, findClient, joinRequestWrites, log }: ClientUsageDependencies): { settle: Middleware } {
  const { track, settle } = eventWork(log);
  provider.on('grant.success', (ctx) => {
    const clientId = ctx.oidc.client?.clientId;
    if (!clientId || !isWellFormedClientId(clientId)) return; // a metadata document's client has no row
    track(ctx, async () => {
      if (useToRecord(await findClient(clientId))) joinRequestWrites(`client-used:${clientId}`, lastUsedWrite(clientId));
    });
  });
  return { settle };
}
