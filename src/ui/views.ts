/**
 * Pug pages, compiled once at start-up. Every page gets `csrf` and `title` from its caller.
 *
 * @example ctx.body = views.render('login', { title: 'Sign in', csrf });
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pug from 'pug';
import type { Context } from 'koa';

export const VIEWS_DIR = fileURLToPath(new URL('../../views', import.meta.url));

export interface Views {
  render(name: string, locals: Record<string, unknown>): string;
  /** Renders into the response as HTML with `status`. */
  respond(ctx: Context, name: string, locals: Record<string, unknown>, status?: number): void;
}

export function createViews(dir = VIEWS_DIR): Views {
  const pages = new Map(
    fs.readdirSync(dir)
      .filter((file) => file.endsWith('.pug') && file !== 'layout.pug')
      .map((file) => [path.basename(file, '.pug'), pug.compileFile(path.join(dir, file))]),
  );
  const render = (name: string, locals: Record<string, unknown>) => {
    const page = pages.get(name);
    if (!page) throw new Error(`no view named ${name}`);
    return page(locals);
  };
  return {
    render,
    respond(ctx, name, locals, status = 200) {
      ctx.status = status;
      ctx.type = 'html';
      ctx.body = render(name, locals);
    },
  };
}
