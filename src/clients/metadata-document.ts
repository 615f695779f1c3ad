/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25):
 * a `client_id` that is an https URL names a document, served there, that describes the client.
 * The provider's own feature fetches (through outbound/guarded-fetch.ts), caches and checks it
 * (its `client_id` equals the URL exactly, no secret-based authentication, https web URIs), and
 * keeps of its lists (grant types, response types) what it supports. What this service asks
 * beyond that is here: a public client (`none`) or one that proves itself with the keys it
 * publishes (`private_key_jwt` with `jwks_uri` or `jwks`); the authorization-code flow, never
 * `client_credentials` (a document vouches for nobody, and no user consents to a machine's token:
 * the grant is dropped from what it lists); and a web client's redirect URIs as any web client's
 * (https, or http on a loopback host).
 *
 * @see https://datatracker.ietf.org/doc/draft-ietf-oauth-client-id-metadata-document/
 */
import { errors } from 'oidc-provider';
import { redirectUriProblem } from './redirect-uri.js';
import { isWellFormedClientId } from './credentials.js';
import { OutboundFetchError } from '../outbound/guarded-fetch.js';

/** The draft's client identifier URL: https, a path other than "/", no fragment, credentials or dot segments. */
export function isMetadataDocumentClientId(value: string): boolean {
  if (value.length > 2000 || !value.startsWith('https://') || /[\s\\#]/.test(value)) return false;
  const url = URL.parse(value);
  if (!url || url.username || url.password || url.pathname === '/') return false;
  return !value.slice('https://'.length).split(/[?]/, 1)[0]!.split('/').some((segment) => /^(\.|%2e){1,2}$/i.test(segment));
}

/** What the provider knows of a client resolved from a document, as `allowClient` sees it. */
interface DocumentClient {
  clientAuthMethod?: string | undefined;
  applicationType?: string | undefined;
  redirectUris?: readonly string[] | undefined;
  grantTypes?: string[] | undefined;
  jwksUri?: string | undefined;
  postLogoutRedirectUris?: readonly string[] | undefined;
  backchannelLogoutUri?: string | undefined;
}

/** Authentication a document's client may declare: none (public), or assertions signed with the keys it publishes. */
const DOCUMENT_AUTH_METHODS = new Set(['none', 'private_key_jwt']);

/**
 * The feature's `allowClient` check, run each time such a client is used (from the cache too):
 * refusals say what is wrong with the document, as invalid_client_metadata.
 */
export function documentClientProblem(client: DocumentClient): string | undefined {
  if (!DOCUMENT_AUTH_METHODS.has(client.clientAuthMethod ?? '')) {
    return 'a client metadata document must declare token_endpoint_auth_method "none" or "private_key_jwt": a secret cannot be published';
  }
  if (!client.grantTypes?.includes('authorization_code')) return 'a client metadata document\'s client must use the authorization code flow (grant_types with authorization_code)';
  // Its back-channel logout tokens go through the webhook guard when they are sent (webhooks/backchannel-logouts.ts).
  if (client.backchannelLogoutUri !== undefined && !/^https?:\/\//.test(client.backchannelLogoutUri)) return 'the client metadata document\'s backchannel_logout_uri must be an http(s) URL';
  if (client.applicationType === 'native') return undefined; // the provider checks native redirect URIs (RFC 8252)
  for (const [name, uris] of [['redirect URI', client.redirectUris], ['post_logout_redirect_uri', client.postLogoutRedirectUris]] as const) {
    for (const uri of uris ?? []) {
      const problem = redirectUriProblem(uri);
      if (problem) return `the client metadata document's ${name} ${uri} is refused: ${problem}`;
    }
  }
  return undefined;
}

/**
 * The feature's `allowClient`: refuses what {@link documentClientProblem} names, narrows the
 * client the provider built for this request (a fresh one each time) to its code flow, and, for a
 * request that carries its assertion, makes sure of the keys at its `jwks_uri` (`keysFor`:
 * oidc/client-keys.ts), so that the provider's fetch of them is answered from the key-set cache.
 */
export function allowDocumentClient(keysFor: (uri: string, ctx: unknown) => Promise<unknown>) {
  return async (ctx: unknown, client: DocumentClient): Promise<boolean> => {
    const problem = documentClientProblem(client);
    if (problem) throw new errors.InvalidClientMetadata(problem);
    client.grantTypes = client.grantTypes!.filter((grant) => grant !== 'client_credentials');
    if (client.clientAuthMethod === 'private_key_jwt' && client.jwksUri) await keysFor(client.jwksUri, ctx);
    return true;
  };
}

const FETCHED = Symbol('metadata documents fetched by this request');

/**
 * The feature's `allowFetch`: one fetch of a document per request. The provider looks a client
 * up again to render an authorization error; a document that just failed is not fetched twice
 * (a fetched one is in the cache by then, and this is not asked).
 */
export function oneFetchPerRequest(ctx: { state?: object } | undefined, clientId: string): Promise<boolean> {
  const state = (ctx?.state ?? {}) as { [FETCHED]?: Set<string> };
  const fetched = state[FETCHED] ??= new Set();
  if (fetched.has(clientId)) return Promise.resolve(false);
  fetched.add(clientId);
  return Promise.resolve(true);
}

/**
 * The reason behind the provider's "client_id metadata document fetch failed", for the error
 * page: the class of failure our fetch met, in its own safe words (outbound/guarded-fetch.ts),
 * the status the document's server answered, or a body that is not JSON; never the network's
 * error (the log has it: {@link metadataFetchDetail}). Other causes stay unexplained.
 */
export function metadataFetchReason(error: unknown): string | undefined {
  const { error_description: description, error_detail: detail, cause } = (error ?? {}) as { error_description?: unknown; error_detail?: unknown; cause?: unknown };
  if (description !== 'client_id metadata document fetch failed') return undefined;
  if (cause instanceof OutboundFetchError) return cause.message;
  if (typeof detail === 'string' && /^unexpected response status \d+$/.test(detail)) return `its server answered ${detail.slice('unexpected response status '.length)}, not 200`;
  if (cause instanceof SyntaxError) return 'the document is not JSON';
  return undefined;
}

/** What the network said of a failed document fetch, for the log line beside the request id (undefined: nothing more). */
export function metadataFetchDetail(error: unknown): string | undefined {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause instanceof OutboundFetchError ? cause.detail : undefined;
}

/** Whether `value` can name a client: an id we issued, or a metadata document's URL. */
export const canNameClient = (value: string) => isWellFormedClientId(value) || isMetadataDocumentClientId(value);
