/**
 * What a declared resource server may be, wherever it is declared (resources:add, the RESOURCES
 * variable): its URI, its scopes, its name and its tokens' lifetime; and the key two spellings of
 * one resource share. RESOURCES is read by the configuration (config/resources.ts) and held to
 * these rules when the service or a command starts ({@link checkedResources}).
 *
 * @example const declared = resourceDeclaration({ uri: 'https://mcp.example.com', scopes: 'tools:read' });
 * @see RFC 8707 §2 (a resource indicator is an absolute URI without a fragment), RFC 6749 §3.3 (scope tokens)
 */
import { DEFAULT_RESOURCE_TOKEN_TTL, resourcesError } from '../config/resources.js';
import type { ResourceDeclaration } from '../config/resources.js';

export type { ResourceDeclaration };

export const MAX_RESOURCE_TOKEN_TTL = 86_400;

/** Scopes of the userinfo token (provider.ts): a resource declaring one would blur what consent grants. */
const OIDC_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

const MAX_URI_LENGTH = 2000;
const MAX_NAME_LENGTH = 100;

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
 * The resources of RESOURCES held to these rules: each entry a {@link resourceDeclaration}, no
 * resource declared twice (in either spelling). Called where the service and the commands start,
 * before anything uses them; a bad entry is a ConfigError naming RESOURCES and the entry.
 */
export function checkedResources(configured: readonly ResourceDeclaration[]): readonly ResourceDeclaration[] {
  const seen = new Set<string>();
  for (const [index, resource] of configured.entries()) {
    try {
      resourceDeclaration(resource);
      if (seen.has(matchKey(resource.uri))) throw new ResourceInputError(`${resource.uri} is declared twice`);
      seen.add(matchKey(resource.uri));
    } catch (error) {
      if (error instanceof ResourceInputError) throw resourcesError(`entry ${index}: ${error.message}`);
      throw error;
    }
  }
  return configured;
}
