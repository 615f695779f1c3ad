/**
 * When a self-registered client (RFC 7591, or the spec's shape) last obtained tokens,
 * `clients.last_used_at`, so that the cleanup job can remove those left unused
 * (idle-clients.ts): every install of an MCP client registers anew, anyone may register in the
 * spec's shape, and the ones thrown away would pile up.
 *
 * Written at most once a day per client and never in a round trip of its own: a code exchange or
 * refresh whose client row (already read with its code or refresh token, store/hot-reads.ts)
 * says it was last used over a day ago names the client in the request's writes
 * (`Writes.clientsUsed`, store/request-state.ts), which go out as the one statement its tokens go
 * out in anyway and commit only with them (oidc/provider-events.ts records it on `grant.success`).
 * An operator's clients are never written: nothing removes them.
 */
import type { Client } from '../generated/prisma/client.js';

/** How old a last use may be before a token request records a new one. */
export const LAST_USED_RESOLUTION_MS = 24 * 3600 * 1000;

/** Whether a use now should be recorded for `client` (self-registered, last recorded over a day ago). */
export function useToRecord(client: Pick<Client, 'registration' | 'lastUsedAt'> | null | undefined, now = Date.now()): boolean {
  if (!client || client.registration === 'operator') return false;
  return client.lastUsedAt === null || now - client.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS;
}
