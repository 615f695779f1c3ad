/**
 * What a declared resource server may look like, wherever it is declared (resources:add, the
 * RESOURCES variable): its URI, its scopes, its name and its tokens' lifetime.
 *
 * @see RFC 8707 §2 (a resource indicator is an absolute URI without a fragment), RFC 6749 §3.3 (scope tokens)
 */
import { ConfigError, read } from './env.js';
import type { Env } from './env.js';

/** How long a resource's access tokens live unless its declaration says otherwise: short, since a JWT cannot be revoked. */
export const DEFAULT_RESOURCE_TOKEN_TTL = 600;
export const MAX_RESOURCE_TOKEN_TTL = 86_400;

/** Scopes of the userinfo token (provider.ts): a resource declaring one would blur what consent grants. */
const OIDC_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

const MAX_URI_LENGTH = 2000;
const MAX_NAME_LENGTH = 100;

/** A resource as declared. */
export interface ResourceDeclaration {
  readonly uri: string;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly accessTokenTtl: number;
}

export class ResourceInputError extends Error {
  override name = 'ResourceInputError';
}

/**
 * The key two spellings of one resource share: its URI without one trailing slash (MCP clients
 * send `https://mcp.example.com/` for a server declared as `https://mcp.example.com`).
 */
export const matchKey = (uri: string) => uri.replace(/\/$/, '');

/** Why `uri` cannot name a resource server, or undefined. */
export function resourceUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_URI_LENGTH) return `the resource URI must be at most ${MAX_URI_LENGTH} characters`;
  const url = URL.parse(uri);
  if (!url) return `${uri} is not an absolute URI`;
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'the resource URI must use https (or http)';
  if (uri.includes('#')) return 'the resource URI must not contain a fragment (RFC 8707 §2)';
  if (url.search || uri.includes('?')) return 'the resource URI must not contain a query';
  if (url.username || url.password) return 'the resource URI must not contain credentials';
  if (/[\s\p{Cc}]/u.test(uri)) return 'the resource URI must not contain white space or control characters';
  return undefined;
}

/** Why `scopes` cannot be a resource's scopes, or undefined. */
export function scopesProblem(scopes: readonly string[]): string | undefined {
  if (scopes.length === 0) return 'a resource needs at least one scope';
  const bad = scopes.find((scope) => !SCOPE_TOKEN.test(scope));
  if (bad !== undefined) return `"${bad}" is not a scope (RFC 6749 §3.3: printable ASCII without space, " or \\)`;
  const oidc = scopes.find((scope) => OIDC_SCOPES.has(scope));
  if (oidc !== undefined) return `"${oidc}" is the profile's scope, not a resource's`;
  return undefined;
}

/** The resource as declared, or a {@link ResourceInputError} saying what is wrong. */
export function resourceDeclaration(input: { uri: string; scopes: string | readonly string[]; name?: string | undefined; accessTokenTtl?: number | undefined }): ResourceDeclaration {
  const problem = resourceUriProblem(input.uri);
  if (problem) throw new ResourceInputError(problem);
  const scopes = [...new Set(typeof input.scopes === 'string' ? input.scopes.split(' ').filter(Boolean) : input.scopes)];
  const scopeProblem = scopesProblem(scopes);
  if (scopeProblem) throw new ResourceInputError(scopeProblem);
  const name = input.name?.trim() || input.uri;
  // Shown on the consent page: no control characters or direction overrides (as client names).
  if (name.length > MAX_NAME_LENGTH) throw new ResourceInputError(`the resource name must be at most ${MAX_NAME_LENGTH} characters`);
  if (/[\p{Cc}\u202a-\u202e\u2066-\u2069]/u.test(name)) throw new ResourceInputError('the resource name must not contain control characters or text-direction overrides');
  const ttl = input.accessTokenTtl ?? DEFAULT_RESOURCE_TOKEN_TTL;
  if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > MAX_RESOURCE_TOKEN_TTL) {
    throw new ResourceInputError(`the access token lifetime must be a whole number of seconds from 1 to ${MAX_RESOURCE_TOKEN_TTL}`);
  }
  return { uri: input.uri, name, scopes, accessTokenTtl: ttl };
}

/**
 * RESOURCES: a JSON array of `{"uri", "scopes", "name"?, "access_token_ttl"?}`, `scopes` a
 * space-separated string as `resources:add --scopes` takes it.
 */
export function declaredResources(env: Env): ResourceDeclaration[] {
  const raw = read(env, 'RESOURCES');
  if (raw === undefined) return [];
  const problem = (text: string) => new ConfigError('RESOURCES', `${text} (a JSON array of {"uri": …, "scopes": "a b", "name"?: …, "access_token_ttl"?: seconds})`);
  let entries: unknown;
  try {
    entries = JSON.parse(raw);
  } catch {
    throw problem('is not JSON');
  }
  if (!Array.isArray(entries)) throw problem('must be an array');
  const seen = new Set<string>();
  return entries.map((entry: unknown, index) => {
    const { uri, scopes, name, access_token_ttl: ttl } = (entry ?? {}) as Record<string, unknown>;
    if (typeof uri !== 'string' || typeof scopes !== 'string' || (name !== undefined && typeof name !== 'string') || (ttl !== undefined && typeof ttl !== 'number')) {
      throw problem(`entry ${index} must have a string uri and scopes`);
    }
    try {
      const declared = resourceDeclaration({ uri, scopes, name, accessTokenTtl: ttl });
      if (seen.has(matchKey(uri))) throw new ResourceInputError(`${uri} is declared twice`);
      seen.add(matchKey(uri));
      return declared;
    } catch (error) {
      if (error instanceof ResourceInputError) throw problem(`entry ${index}: ${error.message}`);
      throw error;
    }
  });
}
