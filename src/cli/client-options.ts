/**
 * The options of `clients:create` and `clients:set-jwks` that describe a client beyond the spec's
 * shape (clients/client-metadata.ts): its grant types, application type, and the keys a
 * private_key_jwt client signs its assertions with (a JWK Set file, or a URL serving one).
 *
 * @example const body = describedBody(values); // undefined: a client in the spec's shape
 */
import fs from 'node:fs';
import { ArgumentError } from './args.js';

export const DESCRIBING_OPTIONS = {
  'grant-types': { type: 'string' },
  'application-type': { type: 'string' },
  'jwks-file': { type: 'string' },
  'jwks-uri': { type: 'string' },
  'signing-alg': { type: 'string' },
} as const;

/** Logout URIs (docs/sessions-and-logout.md), for a client in either shape. */
export const LOGOUT_OPTIONS = {
  'post-logout-redirect-uri': { type: 'string' },
  'backchannel-logout-uri': { type: 'string' },
} as const;

export const LOGOUT_OPTIONS_USAGE = '[--post-logout-redirect-uri <uri>] [--backchannel-logout-uri <url>]';

export const KEY_OPTIONS_USAGE = '(--jwks-file <file> | --jwks-uri <https-url>) [--signing-alg <alg>]';

interface Values {
  'redirect-uri'?: string | undefined;
  'grant-types'?: string | undefined;
  'application-type'?: string | undefined;
  'jwks-file'?: string | undefined;
  'jwks-uri'?: string | undefined;
  'signing-alg'?: string | undefined;
  'post-logout-redirect-uri'?: string | undefined;
  'backchannel-logout-uri'?: string | undefined;
}

/** `--jwks-file` (read and parsed here), `--jwks-uri`, `--signing-alg` as the metadata's `jwks`, `jwks_uri`, `token_endpoint_auth_signing_alg`. */
export function keyFields(values: Values): Record<string, unknown> {
  const file = values['jwks-file'];
  let jwks: unknown;
  if (file !== undefined) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (error) {
      throw new ArgumentError(`--jwks-file ${file} cannot be read: ${(error as Error).message}`);
    }
    try {
      jwks = JSON.parse(text);
    } catch {
      throw new ArgumentError(`--jwks-file ${file} is not JSON (a JWK Set: {"keys": […]})`);
    }
  }
  return { jwks, jwks_uri: values['jwks-uri'], token_endpoint_auth_signing_alg: values['signing-alg'] };
}

/** The RFC 7591 body the options describe, or undefined when only a name and a redirect URI were given (the spec's shape). */
export function describedBody(name: string, values: Values): Record<string, unknown> | undefined {
  const describing = Object.keys(DESCRIBING_OPTIONS).some((option) => values[option as keyof Values] !== undefined);
  if (!describing) return undefined;
  const keys = keyFields(values);
  const redirect = values['redirect-uri'];
  const grantTypes = values['grant-types']?.split(',').map((grant) => grant.trim()).filter(Boolean)
    // Without --grant-types, a client with a redirect URI gets the code flow and refresh tokens, as the spec's clients do.
    ?? (redirect === undefined ? [] : ['authorization_code', 'refresh_token']);
  return {
    client_name: name,
    ...(redirect === undefined ? {} : { redirect_uris: [redirect] }),
    grant_types: grantTypes,
    ...(values['application-type'] === undefined ? {} : { application_type: values['application-type'] }),
    token_endpoint_auth_method: keys.jwks !== undefined || keys.jwks_uri !== undefined ? 'private_key_jwt' : 'client_secret_basic',
    ...Object.fromEntries(Object.entries(keys).filter(([, value]) => value !== undefined)),
    ...(values['post-logout-redirect-uri'] === undefined ? {} : { post_logout_redirect_uris: [values['post-logout-redirect-uri']] }),
    ...(values['backchannel-logout-uri'] === undefined ? {} : { backchannel_logout_uri: values['backchannel-logout-uri'] }),
  };
}
