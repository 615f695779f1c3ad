/**
 * RFC 7591 client metadata: what a self-registering client may ask for, checked field by field
 * into the metadata as registered (defaults filled in as RFC 7591 §2 gives them). Fields the
 * service does not understand are ignored (§2); each refusal is the error §3.2.2 names.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7591#section-2, RFC 8252 §7 (native apps' redirect URIs)
 */
import { validName } from './client-name.js';
import { LOOPBACK_HOSTS, redirectUriProblem } from './redirect-uri.js';

export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

/** The metadata of an RFC 7591 client as it registered it (stored as `clients.metadata`). */
export interface RegisteredMetadata {
  redirect_uris: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  grant_types: ('authorization_code' | 'refresh_token')[];
  response_types: ['code'];
  application_type: 'web' | 'native';
  client_name?: string;
  scope?: string;
  client_uri?: string;
  logo_uri?: string;
  policy_uri?: string;
  tos_uri?: string;
}

/** An RFC 7591 §3.2.2 refusal: `invalid_redirect_uri` or `invalid_client_metadata`. */
export class ClientMetadataError extends Error {
  override name = 'ClientMetadataError';
  constructor(readonly code: 'invalid_redirect_uri' | 'invalid_client_metadata', description: string) {
    super(description);
  }
}

const AUTH_METHODS: readonly string[] = ['client_secret_basic', 'client_secret_post', 'none'];
const GRANT_TYPES: readonly string[] = ['authorization_code', 'refresh_token'];
const WEB_URIS = ['client_uri', 'logo_uri', 'policy_uri', 'tos_uri'] as const;
/** Schemes a private-use redirect must never be: they run or read something in the browser itself. */
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'vbscript:', 'data:', 'blob:', 'file:', 'about:', 'http:', 'https:']);
/** RFC 6749 §3.3 scope-tokens separated by single spaces. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

const invalid = (description: string) => new ClientMetadataError('invalid_client_metadata', description);

function stringList(body: Record<string, unknown>, name: string, fallback: string[]): string[] {
  const value = body[name];
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.length === 0 || value.some((item) => typeof item !== 'string')) throw invalid(`${name} must be a non-empty array of strings`);
  return [...new Set(value as string[])];
}

function oneOf<T extends string>(body: Record<string, unknown>, name: string, allowed: readonly string[], fallback: T): T {
  const value = body[name] ?? fallback;
  if (typeof value !== 'string' || !allowed.includes(value)) throw invalid(`${name} must be ${allowed.join(', ').replace(/, ([^,]*)$/, ' or $1')}`);
  return value as T;
}

/**
 * Web clients: https, or http on a loopback host (redirect-uri.ts, as the spec's clients).
 * Native apps (RFC 8252): http on a loopback host (any port matches at authorization, §7.3), a
 * private-use scheme named after a domain the app controls, such as com.example.app:/cb (§7.1),
 * or a claimed https URI that is not on a loopback host (§7.2).
 */
function redirectUriOf(uri: string, applicationType: 'web' | 'native'): string | undefined {
  if (applicationType === 'web') return redirectUriProblem(uri);
  const url = URL.parse(uri);
  if (!url || uri.length > 2000) return `${uri} is not an absolute URI of at most 2000 characters`;
  if (uri.includes('#')) return 'redirect_uris must not contain a fragment';
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? undefined : 'a native app\'s http redirect URI must be on a loopback host (127.0.0.1, [::1], localhost)';
  if (url.protocol === 'https:') return LOOPBACK_HOSTS.has(url.hostname) ? 'a native app\'s loopback redirect URI uses http' : redirectUriProblem(uri);
  if (FORBIDDEN_SCHEMES.has(url.protocol) || !url.protocol.slice(0, -1).includes('.')) {
    return `${url.protocol} is not a private-use scheme named after a domain the app controls (such as com.example.app:)`;
  }
  return /\s/.test(uri) ? 'redirect_uris must not contain white space' : undefined;
}

/** The metadata as registered, or a {@link ClientMetadataError} saying what cannot be used. */
export function registeredMetadata(body: Record<string, unknown>): RegisteredMetadata {
  const applicationType = oneOf<'web' | 'native'>(body, 'application_type', ['web', 'native'], 'web');
  if (!Array.isArray(body.redirect_uris) || body.redirect_uris.length === 0 || body.redirect_uris.some((uri) => typeof uri !== 'string')) {
    throw new ClientMetadataError('invalid_redirect_uri', 'redirect_uris must be a non-empty array of URIs');
  }
  const redirectUris = [...new Set(body.redirect_uris as string[])];
  for (const uri of redirectUris) {
    const problem = redirectUriOf(uri, applicationType);
    if (problem) throw new ClientMetadataError('invalid_redirect_uri', `${uri}: ${problem.replace(/^redirect_uri /, 'a redirect URI ')}`);
  }
  const grantTypes = stringList(body, 'grant_types', ['authorization_code']);
  const unknownGrant = grantTypes.find((grant) => !GRANT_TYPES.includes(grant));
  if (unknownGrant !== undefined) throw invalid(`grant_types may hold authorization_code and refresh_token, not ${unknownGrant}`);
  // RFC 7591 §2.1: response type "code" goes with the authorization_code grant.
  if (!grantTypes.includes('authorization_code')) throw invalid('grant_types must include authorization_code (the only flow this service serves)');
  const responseTypes = stringList(body, 'response_types', ['code']);
  if (responseTypes.length !== 1 || responseTypes[0] !== 'code') throw invalid('response_types must be ["code"]');

  const metadata: RegisteredMetadata = {
    redirect_uris: redirectUris,
    token_endpoint_auth_method: oneOf<TokenEndpointAuthMethod>(body, 'token_endpoint_auth_method', AUTH_METHODS, 'client_secret_basic'),
    grant_types: grantTypes as RegisteredMetadata['grant_types'],
    response_types: ['code'],
    application_type: applicationType,
  };
  if (body.client_name !== undefined) {
    try {
      metadata.client_name = validName(body.client_name);
    } catch (error) {
      throw invalid((error as Error).message);
    }
  }
  if (body.scope !== undefined) {
    if (typeof body.scope !== 'string' || !SCOPE.test(body.scope)) throw invalid('scope must be scope values separated by single spaces (RFC 6749 §3.3)');
    metadata.scope = body.scope;
  }
  for (const name of WEB_URIS) {
    const value = body[name];
    if (value === undefined) continue;
    const url = typeof value === 'string' && value.length <= 2000 ? URL.parse(value) : null;
    if (url?.protocol !== 'https:' || url.username || url.password) throw invalid(`${name} must be an https URL`);
    metadata[name] = value as string;
  }
  return metadata;
}
