/**
 * Serves the stylesheet at /assets/site.css (the pages' CSP allows styles from 'self' only); its
 * route (http/route-table.ts) says how long it may be kept.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Middleware } from 'koa';

export const STYLESHEET_PATH = '/assets/site.css';

export function staticAssets(viewsDir: string): Middleware {
  const css = fs.readFileSync(path.join(viewsDir, 'site.css'));
  return (ctx) => {
    ctx.type = 'text/css';
    ctx.body = css;
  };
}
