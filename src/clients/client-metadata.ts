/**
 * RFC 7591 client metadata: what a client may be registered with, by itself (RFC 7591 at
 * /api/register.php) or by an operator (clients:create), checked field by field into the
 * metadata as registered (defaults filled in as RFC 7591 §2 gives them). Fields the service does
 * not understand are ignored (§2), and so are the values of a list it does not offer (a grant
 * type, a response type): the client gets the part this service supports, and the answer says
 * what was registered (§3.2.1). It is refused, with the error §3.2.2 names, only when nothing
 * usable remains or a field it relies on is wrong.
 *
 * | what the client does        | grant_types kept                      | it needs                                             |
 * |-----------------------------|---------------------------------------|------------------------------------------------------|
 * | the authorization-code flow | authorization_code, refresh_token     | response_types with code, redirect_uris              |
 * | a machine's own tokens      | client_credentials (RFC 6749 §4.4)    | to be confidential (a secret, or private_key_jwt); self-registered: REGISTRATION_CLIENT_CREDENTIALS |
 *
 * A private_key_jwt client registers its public keys, inline or by URL (registered-keys.ts).
 *
 * @see https://www.rfc-editor.org/rfc/rfc7591#section-2, RFC 8252 §7 (native apps' redirect URIs), RFC 7523 §2.2
 */
import { validName } from './client-name.js';
import { LOOPBACK_HOSTS, redirectUriProblem } from './redirect-uri.js';
import { CLIENT_AUTH_ALGORITHMS, jwksProblem, jwksUriProblem } from './registered-keys.js';
import type { PublicJwks } from './registered-keys.js';

export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'none';
export type GrantType = 'authorization_code' | 'refresh_token' | 'client_credentials';

/** The metadata of a client as it was registered (stored as `clients.metadata`). */
export interface RegisteredMetadata {
  /** Empty for a client without the authorization-code flow (a machine client). */
  redirect_uris: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  grant_types: GrantType[];
  /** `["code"]` with the authorization-code flow, else empty. */
  response_types: 'code'[];
  application_type: 'web' | 'native';
  client_name?: string;
  scope?: string;
  client_uri?: string;
  logo_uri?: string;
  policy_uri?: string;
  tos_uri?: string;
  /** private_key_jwt: its public keys, or where to fetch them (one of the two). */
  jwks?: PublicJwks;
  jwks_uri?: string;
  token_endpoint_auth_signing_alg?: string;
  /** Where RP-initiated logout may send the user back (OpenID Connect RP-Initiated Logout 1.0 §3.1). */
  post_logout_redirect_uris?: string[];
  /** Where back-channel logout tokens are POSTed (OpenID Connect Back-Channel Logout 1.0 §2.2). */
  backchannel_logout_uri?: string;
}

/** The logout fields a client may have whatever its shape (a client in the spec's shape keeps them alone in its metadata). */
export type LogoutFields = Pick<RegisteredMetadata, 'post_logout_redirect_uris' | 'backchannel_logout_uri'>;

/** A client's logout fields, from its metadata (either shape). */
export function logoutFieldsOf(client: { metadata: unknown }): LogoutFields {
  const metadata = (typeof client.metadata === 'object' && client.metadata !== null ? client.metadata : {}) as LogoutFields;
  return {
    ...(Array.isArray(metadata.post_logout_redirect_uris) ? { post_logout_redirect_uris: metadata.post_logout_redirect_uris } : {}),
    ...(typeof metadata.backchannel_logout_uri === 'string' ? { backchannel_logout_uri: metadata.backchannel_logout_uri } : {}),
  };
}

/** What the one registering may ask for beyond the metadata itself. */
export interface MetadataRules {
  /** Whether the client_credentials grant may be kept: always for an operator; REGISTRATION_CLIENT_CREDENTIALS for RFC 7591. */
  readonly clientCredentials: boolean;
  /** The outbound guard's verdict on a jwks_uri's URL (an address it may not reach), if any. */
  readonly jwksUriDestination?: (uri: string) => string | undefined;
  /** The webhook guard's verdict on a backchannel_logout_uri (WEBHOOK_ALLOW_PRIVATE_NETWORKS), if any; without it only the URL's form is checked. */
  readonly backchannelDestination?: (uri: string) => string | undefined;
}

/**
 * A client's metadata as registered, or undefined for a client in the spec's shape (metadata
 * `{}`: one redirect URI, the code flow, client_secret_post), whoever registered either.
 */
export function describedBy(client: { metadata: unknown }): RegisteredMetadata | undefined {
  const metadata = client.metadata as Partial<RegisteredMetadata> | null;
  return typeof metadata === 'object' && metadata !== null && typeof metadata.token_endpoint_auth_method === 'string' ? metadata as RegisteredMetadata : undefined;
}

/** Whether a client registered with `method` authenticates with a secret (RFC 6749 §2.3.1). */
export const usesSecret = (method: string) => method === 'client_secret_basic' || method === 'client_secret_post';

/** An RFC 7591 §3.2.2 refusal: `invalid_redirect_uri` or `invalid_client_metadata`. */
export class ClientMetadataError extends Error {
  override name = 'ClientMetadataError';
  constructor(readonly code: 'invalid_redirect_uri' | 'invalid_client_metadata', description: string) {
    super(description);
  }
}

const AUTH_METHODS: readonly string[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];
const WEB_URIS = ['client_uri', 'logo_uri', 'policy_uri', 'tos_uri'] as const;
/** Schemes a private-use redirect must never be: they run or read something in the browser itself. */
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'vbscript:', 'data:', 'blob:', 'file:', 'about:', 'http:', 'https:']);
/** RFC 6749 §3.3 scope-tokens separated by single spaces. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

const invalid = (description: string) => new ClientMetadataError('invalid_client_metadata', description);

function stringList(body: Record<string, unknown>, name: string, fallback: string[]): string[] {
  const value = body[name];
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw invalid(`${name} must be an array of strings`);
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

/** Why `method` cannot be registered, or undefined. */
function authMethodProblem(method: unknown): string | undefined {
  if (method === undefined || AUTH_METHODS.includes(method as string)) return undefined;
  if (method === 'client_secret_jwt') {
    return 'token_endpoint_auth_method client_secret_jwt is not offered: client secrets are kept as digests, so no signing key can derive from one (use private_key_jwt or client_secret_basic)';
  }
  return `token_endpoint_auth_method must be ${AUTH_METHODS.join(', ').replace(/, ([^,]*)$/, ' or $1')}`;
}

/**
 * The grant types kept of those listed (RFC 7591 §2.1; unknown ones are dropped), or a refusal
 * saying why nothing usable remains.
 */
function grantTypesOf(body: Record<string, unknown>, method: TokenEndpointAuthMethod, rules: MetadataRules): GrantType[] {
  const listed = stringList(body, 'grant_types', ['authorization_code']);
  const responseTypes = stringList(body, 'response_types', ['code']);
  // The code flow needs its grant and its response type (RFC 7591 §2.1), and a refresh token comes only from it.
  const codeFlow = listed.includes('authorization_code') && responseTypes.includes('code');
  const machineAsked = listed.includes('client_credentials');
  // RFC 6749 §4.4: only a client that can authenticate may get a token for itself.
  const machine = machineAsked && method !== 'none' && rules.clientCredentials;
  const kept: GrantType[] = codeFlow ? ['authorization_code', ...(listed.includes('refresh_token') ? ['refresh_token' as const] : [])] : [];
  if (machine) kept.push('client_credentials');
  if (kept.length > 0) return kept;
  if (machineAsked && method === 'none') throw invalid('a public client (token_endpoint_auth_method none) cannot use client_credentials: nothing would prove who asks; and grant_types has no authorization_code with response_types code');
  if (machineAsked) throw invalid('client_credentials is not open to self-registration here (an operator creates machine clients), and grant_types has no authorization_code with response_types code');
  throw invalid('nothing this service offers remains: grant_types must include authorization_code (with response_types code) or client_credentials');
}

/** The redirect URIs of a client with the code flow (a client without it is redirected nowhere: none are kept). */
function redirectUrisOf(body: Record<string, unknown>, applicationType: 'web' | 'native', codeFlow: boolean): string[] {
  if (!codeFlow) return [];
  if (!Array.isArray(body.redirect_uris) || body.redirect_uris.length === 0 || body.redirect_uris.some((uri) => typeof uri !== 'string')) {
    throw new ClientMetadataError('invalid_redirect_uri', 'redirect_uris must be a non-empty array of URIs');
  }
  const redirectUris = [...new Set(body.redirect_uris as string[])];
  for (const uri of redirectUris) {
    const problem = redirectUriOf(uri, applicationType);
    if (problem) throw new ClientMetadataError('invalid_redirect_uri', `${uri}: ${problem.replace(/^redirect_uri /, 'a redirect URI ')}`);
  }
  return redirectUris;
}

/** A private_key_jwt client's keys (RFC 7523 §2.2): `jwks` or `jwks_uri`, and the algorithm it signs with if it names one. */
function keysOf(body: Record<string, unknown>, rules: MetadataRules): Pick<RegisteredMetadata, 'jwks' | 'jwks_uri' | 'token_endpoint_auth_signing_alg'> {
  const { jwks, jwks_uri: uri, token_endpoint_auth_signing_alg: alg } = body;
  if ((jwks === undefined) === (uri === undefined)) throw invalid('a private_key_jwt client registers its public keys in exactly one of jwks and jwks_uri');
  const problem = uri === undefined ? jwksProblem(jwks) : jwksUriProblem(uri) ?? rules.jwksUriDestination?.(uri as string);
  if (problem) throw invalid(problem.startsWith('jwks') ? problem : `jwks_uri: ${problem}`);
  if (alg !== undefined && !CLIENT_AUTH_ALGORITHMS.includes(alg as string)) {
    throw invalid(`token_endpoint_auth_signing_alg must be ${CLIENT_AUTH_ALGORITHMS.join(', ').replace(/, ([^,]*)$/, ' or $1')} (asymmetric only)`);
  }
  return { ...(uri === undefined ? { jwks: jwks as PublicJwks } : { jwks_uri: uri as string }), ...(alg === undefined ? {} : { token_endpoint_auth_signing_alg: alg as string }) };
}

/**
 * The logout fields of `body` (either dialect), checked: post_logout_redirect_uris as redirect URIs
 * are (a native app's loopback URI matches on any port, as its redirect URIs do), the
 * backchannel_logout_uri as a webhook URL is (an absolute http(s) URL without fragment,
 * through the webhook guard), since it is where our own requests go.
 * @see OpenID Connect RP-Initiated Logout 1.0 §3.1, Back-Channel Logout 1.0 §2.2
 */
export function logoutFields(body: Record<string, unknown>, applicationType: 'web' | 'native', rules: Pick<MetadataRules, 'backchannelDestination'>): LogoutFields {
  const fields: LogoutFields = {};
  if (body.post_logout_redirect_uris !== undefined) {
    const uris = stringList(body, 'post_logout_redirect_uris', []);
    for (const uri of uris) {
      const problem = redirectUriOf(uri, applicationType);
      if (problem) throw invalid(`post_logout_redirect_uris: ${uri}: ${problem.replace(/^redirect_uris? /, 'a URI ')}`);
    }
    if (uris.length) fields.post_logout_redirect_uris = uris;
  }
  if (body.backchannel_logout_uri !== undefined) {
    const backchannel = body.backchannel_logout_uri as string;
    const url = typeof backchannel === 'string' && backchannel.length <= 2000 ? URL.parse(backchannel) : null;
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) throw invalid('backchannel_logout_uri must be an absolute http(s) URL of at most 2000 characters');
    if (backchannel.includes('#')) throw invalid('backchannel_logout_uri must not contain a fragment');
    if (url.username || url.password) throw invalid('backchannel_logout_uri must not contain credentials');
    const problem = rules.backchannelDestination?.(backchannel);
    if (problem) throw invalid(`backchannel_logout_uri: ${problem}`);
    fields.backchannel_logout_uri = backchannel;
  }
  return fields;
}

/** The metadata as registered, or a {@link ClientMetadataError} saying what cannot be used. */
export function registeredMetadata(body: Record<string, unknown>, rules: MetadataRules): RegisteredMetadata {
  const applicationType = oneOf<'web' | 'native'>(body, 'application_type', ['web', 'native'], 'web');
  const methodRefused = authMethodProblem(body.token_endpoint_auth_method);
  if (methodRefused) throw invalid(methodRefused);
  const method = oneOf<TokenEndpointAuthMethod>(body, 'token_endpoint_auth_method', AUTH_METHODS, 'client_secret_basic');
  const grantTypes = grantTypesOf(body, method, rules);
  const codeFlow = grantTypes.includes('authorization_code');

  const metadata: RegisteredMetadata = {
    redirect_uris: redirectUrisOf(body, applicationType, codeFlow),
    token_endpoint_auth_method: method,
    grant_types: grantTypes,
    response_types: codeFlow ? ['code'] : [],
    application_type: applicationType,
    ...(method === 'private_key_jwt' ? keysOf(body, rules) : {}),
    ...logoutFields(body, applicationType, rules),
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
