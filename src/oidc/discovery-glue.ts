/**
 * RFC 8414 §2 `scopes_supported`: the scopes a client may ask for. The provider lists its own
 * (`scopes`: the profile's `openid`, `profile`, `email`); the declared resource servers' scopes
 * change while the service runs (resources:add), so they are added to its answer here, the list
 * read at most once every {@link RESOURCE_SCOPES_TTL_MS} (discovery is read by every client: it
 * stays one answer of the provider's, and a resource added shows within that time).
 *
 * `offline_access` is not listed (the provider would): a refresh token comes with the
 * `refresh_token` grant, without it (provider.ts `issueRefreshToken`); asked for with
 * prompt=consent it makes a grant that outlives the login session (docs/sessions-and-logout.md).
 * Listing it would lead some clients (the MCP SDK) to ask for consent on every authorization.
 *
 * @example const discovery = compose([discoveryGlue(async () => (await resources.list()).flatMap((r) => r.scopes)), toProvider]);
 */
import type { Middleware } from 'koa';

export const RESOURCE_SCOPES_TTL_MS = 5000;

export function discoveryGlue(resourceScopes: () => Promise<readonly string[]>, clock: () => number = Date.now): Middleware {
  let read: { at: number; scopes: Promise<readonly string[]> } | undefined;
  const current = () => {
    if (!read || clock() - read.at >= RESOURCE_SCOPES_TTL_MS) {
      const scopes = resourceScopes();
      read = { at: clock(), scopes };
      scopes.catch(() => { read = undefined; }); // a failed read is not kept: the next request reads again
    }
    return read.scopes;
  };
  return async (ctx, next) => {
    await next();
    const body = ctx.body as { scopes_supported?: unknown } | undefined;
    if (ctx.status !== 200 || !body || !Array.isArray(body.scopes_supported)) return;
    const own = (body.scopes_supported as string[]).filter((scope) => scope !== 'offline_access');
    ctx.body = { ...body, scopes_supported: [...new Set([...own, ...await current()])] };
  };
}
