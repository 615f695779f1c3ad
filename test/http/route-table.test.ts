/**
 * The route table (src/http/route-table.ts) and `openapi.json` describe the same service: every
 * path and method the document describes is a row of the table, and every row the document is
 * meant to describe is in it, with the same methods; where the table says a path is rate limited,
 * the document declares its 429, and where it gives a public cache age, the document's 200
 * carries that `Cache-Control`. No server: both are read as they are.
 *
 * Deliberately not in openapi.json (the rows below `UNDOCUMENTED`): the logout confirmation and
 * "signed out" pages, reached only by the provider's own logout page and redirect, and the pages'
 * stylesheet; and the families of paths under a prefix (the authorization's resumption, the login
 * and consent pages), which are reached only by redirect and are no exact paths.
 */
import fs from 'node:fs';
import { describe, expect, test } from '@jest/globals';
import { OPENAPI_FILE } from '../../src/http/openapi-document.js';
import { limited, openCors, pathsWhere, servedMethods, tokenRoutes } from '../../src/http/route-lists.js';
import { ROUTE_FAMILIES, ROUTE_TABLE } from '../../src/http/route-table.js';
import type { Route } from '../../src/http/route-table.js';
import { STYLESHEET_PATH } from '../../src/http/static-assets.js';
import { END_SESSION_CONFIRM_PATH, END_SESSION_SUCCESS_PATH, ROUTES } from '../../src/oidc/routes.js';
import { REGISTER_PATH } from '../../src/ui/register.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const doc = JSON.parse(fs.readFileSync(OPENAPI_FILE, 'utf8')) as Json;
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** Rows the document leaves out on purpose (see the comment at the top). */
const UNDOCUMENTED = new Set([END_SESSION_CONFIRM_PATH, END_SESSION_SUCCESS_PATH, STYLESHEET_PATH]);

const rows: readonly Route[] = ROUTE_TABLE;
const documented = rows.filter((route) => !UNDOCUMENTED.has(route.path));

/** `METHOD path` for every operation of the document. */
function operations(): string[] {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.keys(item as Json).filter((key) => HTTP_METHODS.has(key)).map((method) => `${method.toUpperCase()} ${path}`));
}

/** A response object, its `$ref` followed (`#/components/responses/…`). */
function resolve(response: Json): Json {
  const ref = response.$ref as string | undefined;
  if (!ref) return response;
  return ref.slice(2).split('/').reduce((node: Json, part) => node[part], doc);
}

const operation = (route: Route, method: string) => doc.paths[route.path][method.toLowerCase()] as Json;

describe('the route table', () => {
  test('declares each path once', () => {
    const paths = rows.map((route) => route.path);
    expect(paths.filter((path, i) => paths.indexOf(path) !== i)).toEqual([]);
  });

  test('has every path and method of openapi.json, and openapi.json every documented row', () => {
    const table = documented.flatMap((route) => route.methods.map((method) => `${method} ${route.path}`));
    expect(table.sort()).toEqual(operations().sort());
  });

  test('leaves out of openapi.json only the rows it means to', () => {
    for (const path of UNDOCUMENTED) {
      expect([path, rows.some((route) => route.path === path)]).toEqual([path, true]);
      expect([path, doc.paths[path]]).toEqual([path, undefined]);
    }
    for (const family of ROUTE_FAMILIES) expect([family.under, doc.paths[family.under]]).toEqual([family.under, undefined]);
  });

  test('a rate-limited row declares its 429 in openapi.json, an unlimited one none', () => {
    for (const route of documented) {
      for (const method of route.methods) {
        const declared = '429' in operation(route, method).responses;
        expect([method, route.path, declared]).toEqual([method, route.path, limited(route)]);
      }
    }
  });

  test("a row's public cache age is the Cache-Control of its documented 200", () => {
    for (const route of documented) {
      const ok = operation(route, 'GET')?.responses?.['200'];
      const header = ok && resolve(ok).headers?.['Cache-Control'];
      const documentedAge = header && resolve(header).schema?.const;
      const publicAge = typeof documentedAge === 'string' && documentedAge.startsWith('public') ? documentedAge : undefined;
      const tableAge = route.maxAgeSeconds === undefined ? undefined : `public, max-age=${route.maxAgeSeconds}`;
      expect([route.path, tableAge]).toEqual([route.path, publicAge]);
    }
  });
});

describe("the lists the middleware reads off it", () => {
  test('the token endpoint is the one token path, its POST budgeted by its route', () => {
    expect(tokenRoutes(rows)).toEqual(new Map([[ROUTES.token, ['POST']]]));
  });

  test('RFC 7591 registration is the one path open to any origin, for its POST', () => {
    expect(openCors(rows)).toEqual(new Map([[REGISTER_PATH, ['POST']]]));
  });

  test('the provider gets its own paths only, and every one is an exact path with its methods', () => {
    const provider = pathsWhere(rows, (route) => route.provider === true);
    expect(new Set(provider)).toEqual(new Set([...Object.values(ROUTES), END_SESSION_CONFIRM_PATH, END_SESSION_SUCCESS_PATH, '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']));
    const served = servedMethods(rows.filter(limited));
    for (const path of provider) expect(served[path]).toBeDefined();
  });
});
