/**
 * `GET /api/openapi.json`: the OpenAPI 3.1 description of every API path, served from
 * `openapi.json` at the repository root (beside dist/ in the image).
 * Read once at start-up, so a missing or broken file stops the service before it listens; its
 * route (http/route-table.ts) says how long it may be kept.
 *
 * @example router.get(OPENAPI_PATH, openapiDocument());
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Middleware } from 'koa';

export const OPENAPI_PATH = '/api/openapi.json';
export const OPENAPI_FILE = fileURLToPath(new URL('../../openapi.json', import.meta.url));

export function openapiDocument(file = OPENAPI_FILE): Middleware {
  const text = fs.readFileSync(file, 'utf8');
  JSON.parse(text); // fail at start-up, not on the first request
  return (ctx) => {
    ctx.type = 'application/json';
    ctx.body = text;
  };
}
