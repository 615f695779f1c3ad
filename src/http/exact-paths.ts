/**
 * The service's paths are exact (spec "Endpoints"). oidc-provider's router, like koa-router,
 * also answers a path in other letter case or with a trailing slash (`/API/Token.php/`); the
 * rate limits, the spec glue and the JSON error paths match paths exactly, so such a spelling
 * would slip past them (the token budget above all). Any other spelling of a known path is
 * answered 404, naming the path meant.
 *
 * @example koa.use(exactPaths([ROUTES.token, REGISTER_PATH]));
 */
import type { Middleware } from 'koa';
import { ServiceError } from '../errors.js';

/** What routers treat as the same path: any case, percent-encoded or not, trailing slashes. */
function fold(path: string): string {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // a malformed escape is no spelling of a known path
  }
  return decoded.replace(/\/+$/, '').toLowerCase();
}

export function exactPaths(paths: readonly string[]): Middleware {
  const canonical = new Map(paths.map((path) => [fold(path), path]));
  return async (ctx, next) => {
    const meant = canonical.get(fold(ctx.path));
    if (meant !== undefined && meant !== ctx.path) {
      throw new ServiceError('not_found', `No endpoint at ${ctx.path}. Paths are exact: did you mean ${meant}?`);
    }
    await next();
  };
}
