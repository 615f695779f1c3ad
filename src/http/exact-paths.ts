// Kept over @koa/router's allowedMethods(): it answers a plain OPTIONS 200 (RFC 9110 §9.3.7 suits 204), lists Allow in registration order with HEAD first, and its 405 cannot name the method and path in the spec's error body.
/**
 * The service's paths are exact (spec "Endpoints"), and so are their methods.
 *
 * oidc-provider's router, like koa-router, also answers a path in other letter case or with a
 * trailing slash (`/API/Token.php/`); the rate limits, the spec glue and the JSON error paths
 * match paths exactly, so such a spelling would slip past them (the token budget above all).
 * Any other spelling of a known path is answered 404, naming the path meant.
 *
 * A known path asked with a method nothing answers there is 405 `method_not_allowed` with
 * `Allow` (RFC 9110 §15.5.6), and a plain OPTIONS (not a CORS preflight, which the provider
 * answers) is 204 with `Allow` (RFC 9110 §9.3.7).
 *
 * @example koa.use(exactPaths({ '/api/token.php': ['POST'] }));
 */
import type { Middleware } from 'koa';
import { ServiceError } from '../errors.js';

/** What routers treat as the same path: any case, percent-encoded or not, trailing slashes. */
export function foldPath(path: string): string {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // a malformed escape is no spelling of a known path
  }
  return decoded.replace(/\/+$/, '').toLowerCase();
}

/** `served`: each path and the methods it answers (HEAD comes with GET). */
export function exactPaths(served: Readonly<Record<string, readonly string[]>>): Middleware {
  const canonical = new Map(Object.keys(served).map((path) => [foldPath(path), path]));
  const allow = new Map(Object.entries(served).map(([path, methods]) => [path, [...methods, ...(methods.includes('GET') ? ['HEAD'] : []), 'OPTIONS'].join(', ')]));
  return async (ctx, next) => {
    const meant = canonical.get(foldPath(ctx.path));
    if (meant !== undefined && meant !== ctx.path) {
      throw new ServiceError('not_found', `No endpoint at ${ctx.path}. Paths are exact: did you mean ${meant}?`);
    }
    await next();
    if (meant === undefined || ctx.status !== 404 || ctx.body != null) return;
    const use = served[meant]!;
    if (use.includes(ctx.method) || (ctx.method === 'HEAD' && use.includes('GET'))) return; // a 404 of its own (none yet)
    ctx.set('Allow', allow.get(meant)!);
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      return;
    }
    throw new ServiceError('method_not_allowed', `${ctx.method} is not supported at ${ctx.path}; use ${use.length > 1 ? `${use.slice(0, -1).join(', ')} or ${use.at(-1)}` : use[0]}`);
  };
}
