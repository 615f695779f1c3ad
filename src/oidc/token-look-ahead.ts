/**
 * What a token request will look up after authenticating its client: the code (RFC 6749 §4.1.3)
 * or the refresh token (§6) its form names. store/hot-reads.ts reads it in the same statement
 * as the client, with its grant and user, so a code exchange or a refresh reads once.
 *
 * @example koa.use(requestMemo(guard, tokenLookAhead));
 */
import type { Context } from 'koa';
import type { LookAhead } from '../store/request-memo.js';
import { ROUTES } from './routes.js';

export function tokenLookAhead(ctx: Context): LookAhead | undefined {
  if (ctx.path !== ROUTES.token || ctx.method !== 'POST') return undefined;
  // The form as spec-glue.ts read it (grant_type already defaulted to authorization_code).
  const form = (ctx.request as { body?: Record<string, unknown> }).body;
  if (form?.grant_type === 'authorization_code' && typeof form.code === 'string') return { type: 'AuthorizationCode', id: form.code };
  if (form?.grant_type === 'refresh_token' && typeof form.refresh_token === 'string') return { type: 'RefreshToken', id: form.refresh_token };
  return undefined;
}
