/**
 * What the middleware needs to know of the paths, each list read off the route table
 * (http/route-table.ts), and the router that sends each path and method to its handler.
 *
 * @example koa.use(routerOf(ROUTE_TABLE.filter(limited), handlers).routes()).use(exactPaths(servedMethods(ROUTE_TABLE.filter(limited))));
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import compose from 'koa-compose';
import { publicCache } from './responses.js';
import type { Method, Route } from './route-table.js';

/** A row's handler: one middleware for all its methods, or one per method. */
export type Handler = Middleware | Partial<Record<Method, Middleware>>;

/** Rows answered after the rate limits (all but health checks and the stylesheet). */
export const limited = (route: Route) => route.budget !== 'unlimited';

/** Each exact path and the methods it answers (http/exact-paths.ts: 405s, OPTIONS). */
export function servedMethods(routes: readonly Route[]): Record<string, readonly Method[]> {
  return Object.fromEntries(routes.map((route) => [route.path, route.methods]));
}

/** The paths of the rows that `keep`. */
export function pathsWhere(routes: readonly Route[], keep: (route: Route) => boolean): string[] {
  return routes.filter(keep).map((route) => route.path);
}

/** Paths open to any origin, and the methods a page may use there (http/responses.ts `browserCors`). */
export function openCors(routes: readonly Route[]): Map<string, readonly Method[]> {
  return new Map(routes.flatMap((route) => (typeof route.cors === 'object' ? [[route.path, route.cors.open] as const] : [])));
}

/** A token path's methods, whose budgets its route spends (http/rate-limit.ts). */
export function tokenRoutes(routes: readonly Route[]): Map<string, readonly Method[]> {
  return new Map(routes.filter((route) => route.budget === 'token').map((route) => [route.path, route.methods]));
}

/**
 * The rows' paths and methods, each to its handler (`handlers[route.handler]`), behind the row's
 * public cache age. Exact paths only (strict, case-sensitive): another spelling goes on.
 * A handler missing for a declared method, or given for one the row does not declare, stops
 * the start.
 */
export function routerOf(routes: readonly Route[], handlers: Readonly<Record<string, Handler>>): Router {
  const router = new Router({ strict: true, sensitive: true });
  for (const route of routes) {
    const handler = handlers[route.handler];
    if (handler === undefined) throw new Error(`no handler named ${route.handler} for ${route.path}`);
    const extra = typeof handler === 'function' ? [] : Object.keys(handler).filter((method) => !route.methods.includes(method as Method));
    if (extra.length > 0) throw new Error(`${route.handler} answers ${extra.join(', ')}, which ${route.path} does not declare`);
    for (const method of route.methods) {
      const answer = typeof handler === 'function' ? handler : handler[method];
      if (!answer) throw new Error(`${route.handler} has no ${method} for ${route.path}`);
      const chain = route.maxAgeSeconds === undefined ? answer : compose([publicCache(route.maxAgeSeconds), answer]);
      router.register(route.path, [method], [chain]);
    }
  }
  return router;
}
