/**
 * oidc-provider configured for the spec and for the clients that bring themselves: the
 * authorization-code flow with rotating refresh tokens, and client_credentials for confidential
 * clients that registered it; confidential clients (client_secret_post, client_secret_basic,
 * private_key_jwt) and public ones (`none`, PKCE S256 required); opaque access tokens, or an
 * RFC 9068 JWT for a declared resource (RFC 8707); Client ID Metadata Documents; revocation and
 * introspection limited to a client's own tokens. Everything here is
 * the provider's own configuration; the few request shapes it cannot express are in
 * token-endpoint.ts and spec-glue.ts. Also here: which provider serves a request while signing
 * keys rotate ({@link servedByMoment}).
 *
 * @see https://github.com/panva/node-oidc-provider/blob/main/docs/README.md
 */
import type { JsonWebKey } from 'node:crypto';
import type { Middleware } from 'koa';
import Provider, { errors, interactionPolicy } from 'oidc-provider';
import type { Configuration, FindAccount, KoaContextWithOIDC } from 'oidc-provider';
import { CLAIMS } from '../accounts/provider-account.js';
import { DECOY } from '../clients/credentials.js';
import type { SecretCheck } from '../clients/credentials.js';
import { allowDocumentClient, oneFetchPerRequest } from '../clients/metadata-document.js';
import { CLIENT_AUTH_ALGORITHMS } from '../clients/registered-keys.js';
import type { Config } from '../config.js';
import type { Logger } from '../ops/logger.js';
import type { CookieKeys } from '../store/cookie-keys.js';
import { metadataDigests, PREVIOUS_SECRET_METADATA } from './adapter.js';
import type { AdapterFor } from './adapter.js';
import { assertionClaimsCheck, CLOCK_SKEW_SECONDS } from './client-assertions.js';
import type { ClientKeys } from './client-keys.js';
import { JWT_ACCESS_TOKEN_FORMATS, resourceIndicators } from './resource-indicators.js';
import type { FindResource } from './resource-indicators.js';
import { interactionPath, REGISTRATION_PATH, ROUTES } from './routes.js';

export interface ProviderDependencies {
  config: Config;
  keys: CookieKeys;
  /** The signing keys in force, the signing one first (oidc/key-rotation.ts). */
  jwks: Jwks;
  adapters: AdapterFor;
  findAccount: FindAccount;
  /** Renders an error that must not go back to the client (untrusted client or redirect_uri). */
  renderError: NonNullable<Configuration['renderError']>;
  /** Checks a presented client secret against the stored digests (the previous one in its grace too). */
  checkClientSecret: SecretCheck;
  /** The declared resource server a `resource` (RFC 8707) names, if any. */
  findResource: FindResource;
  /** Outgoing requests (Client ID Metadata Documents; key sets answered from their cache: oidc/client-keys.ts), through the outbound guard (outbound/guarded-fetch.ts). */
  fetch: NonNullable<Configuration['fetch']>;
  /** The keys at a metadata document client's jwks_uri, for the assertion of the request (oidc/client-keys.ts). */
  clientKeys: ClientKeys;
  /** Our pages of RP-initiated logout (ui/logout-pages.ts). */
  logoutPages: LogoutPages;
}

/**
 * The pages of RP-initiated logout, in the look of the others. `confirm` asks the user (its form
 * posts `xsrf`, the provider's anti-forgery secret of this session, to `action`; `logout=yes`
 * ends the session); `signedOut` says it is done, when no registered post_logout_redirect_uri was
 * given. @see OpenID Connect RP-Initiated Logout 1.0 §2, §3
 */
export interface LogoutPages {
  confirm(ctx: KoaContextWithOIDC, page: { action: string; xsrf: string; clientName: string | undefined }): void | Promise<void>;
  signedOut(ctx: KoaContextWithOIDC, page: { clientName: string | undefined }): void | Promise<void>;
}

/** Signing algorithms without HS*: client_secret holds a digest, so no key may derive from it. */
const ASYMMETRIC = [...CLIENT_AUTH_ALGORITHMS];

/**
 * How a confidential client authenticates: its secret (RFC 6749 §2.3.1), or an assertion signed
 * with its own keys (RFC 7523 §2.2). Never client_secret_jwt: no key may derive from a digest.
 */
const CLIENT_AUTH_METHODS: ('client_secret_post' | 'client_secret_basic' | 'private_key_jwt')[] = ['client_secret_post', 'client_secret_basic', 'private_key_jwt'];

/** RFC 6749 §2.1: a public client (a native or browser app) has no secret; it names itself by client_id. */
const PUBLIC = 'none';

const epochTime = () => Math.floor(Date.now() / 1000);

/** How long a login session lives (the provider's `ttl.Session`). */
export const SESSION_TTL_SECONDS = 14 * 24 * 3600;

/** A client sees and revokes only tokens issued to it. @see RFC 7009 §2.1, RFC 7662 §4 */
const ownToken = (_ctx: KoaContextWithOIDC, client: { clientId: string }, token: { clientId?: string }) => token.clientId === client.clientId;

/**
 * The provider's interaction policy, plus one login check: a login session whose account
 * `findAccount` no longer finds (the user was disabled or deleted, or an operator ended their
 * sessions) must sign in again. The
 * provider itself only asks whether the session names an account at all, and would go on to
 * consent with no account. With `prompt=none` the client gets `login_required`.
 * @see OpenID Connect Core §3.1.2.3 (the user must be authenticated), §3.1.2.6 (login_required)
 */
function interactionPolicyWithAccountCheck(): interactionPolicy.Prompt[] {
  const policy = interactionPolicy.base();
  policy.get('login')!.checks.add(new interactionPolicy.Check(
    'account_unavailable',
    'the signed-in account is no longer available',
    'login_required', // a check added later does not get its prompt's default error
    (ctx) => Boolean(ctx.oidc.session?.accountId && !ctx.oidc.account),
  ));
  return policy;
}

/** A private JWK set: the provider's `jwks`, the signing key first. */
export interface Jwks {
  keys: JsonWebKey[];
}

/** The providers built for the moments the published keys change (oidc/key-rotation.ts plans them). */
export interface ProviderStages {
  /** From `from` (ms, on the database's clock; the first from the start of time) `serve` answers, its keys being `order`. */
  readonly stages: readonly { readonly from: number; readonly order: string; readonly serve: Middleware }[];
  /** The database's clock minus ours, in ms. */
  readonly offset: number;
}

/**
 * Serves each request with the provider of the moment it arrives, so every instance switches
 * signing keys at the stored instant, not at its next read of the key table; a switch is logged.
 */
export function servedByMoment(planned: ProviderStages, logger: Pick<Logger, 'info'>): Middleware {
  let serving = '';
  return (ctx, next) => {
    const now = Date.now() + planned.offset;
    let stage = planned.stages[0]!;
    for (const candidate of planned.stages) if (candidate.from <= now) stage = candidate;
    if (stage.order !== serving) {
      serving = stage.order;
      const [kid, ...others] = serving.split(' ');
      logger.info({ kid, also_published: others }, 'signing keys in use');
    }
    return stage.serve(ctx, next);
  };
}

export function createProvider(deps: ProviderDependencies): Provider {
  const { config, keys } = deps;
  const documents = config.standardClients.metadataDocuments;
  const cookie = { httpOnly: true, sameSite: 'lax', secure: config.secureCookies, signed: true } as const;
  // A grant must outlive every refresh token issued under it (validateGrant refuses a refresh
  // whose grant is gone): refresh tokens live REFRESH_TOKEN_TTL from their code exchange, and
  // a code can be redeemed up to AUTHORIZATION_CODE_TTL after the grant was loaded.
  const grantMinimum = config.refreshTokenTtl + config.authorizationCodeTtl;
  const grantTtl = grantMinimum + 24 * 3600;

  const provider = new Provider(config.baseUrl, {
    adapter: deps.adapters as unknown as Configuration['adapter'],
    findAccount: deps.findAccount,
    renderError: deps.renderError,
    routes: ROUTES,
    responseTypes: ['code'],
    clientAuthMethods: [...CLIENT_AUTH_METHODS, PUBLIC],
    // The previous secret's digest and the end of its grace, read with the client (adapter.ts).
    extraClientMetadata: { properties: PREVIOUS_SECRET_METADATA },
    // private_key_jwt assertions: the skew on exp, nbf and iat; aud, iat and the lifetime as client-assertions.ts decides.
    clockTolerance: CLOCK_SKEW_SECONDS,
    assertJwtClientAuthClaimsAndHeader: assertionClaimsCheck([config.baseUrl, `${config.baseUrl}${ROUTES.token}`]),
    // offline_access (OpenID Connect Core §11): a grant that outlives the login session
    // (docs/sessions-and-logout.md); the provider keeps it only with prompt=consent.
    scopes: ['openid', 'profile', 'email', 'offline_access'],
    claims: CLAIMS,
    // A PKCE challenge is verified whenever the client sent one; confidential clients without
    // PKCE work. A public client must use it: its code_verifier is all that binds the code to it
    // (a request without one goes back to the client as invalid_request). Only S256 exists in
    // oidc-provider 9. @see RFC 7636 §4.6, RFC 9700 §2.1.1, RFC 8252 §6
    pkce: { required: (_ctx, client) => client.clientAuthMethod === PUBLIC },
    // A page may call the token, userinfo and revocation endpoints for a public client, from one
    // of its redirect URIs' origins; a confidential client's secret and tokens belong on a server.
    // (Registration, and our own errors on these paths, are open to pages: http/cors.ts.)
    clientBasedCORS: (_ctx, origin, client) => client.clientAuthMethod === PUBLIC && (client.redirectUris ?? []).some((uri) => URL.parse(uri)?.origin === origin),
    // The spec's code has no redirect_uri at the token endpoint; the provider fills in a
    // client's single registered URI. spec-glue.ts still demands it at authorization.
    allowOmittingSingleRegisteredRedirectUri: true,
    // Tokens are not looked up against the login session on each use: without Redis sessions
    // are in process memory, and a restart would void every issued access token. Instead, when a
    // session ends (logout, the applications page, an operator), the grants it made without
    // offline_access are revoked there and then (oidc/session-end.ts, docs/sessions-and-logout.md);
    // so the provider's own end-session step revokes nothing itself (every authorization
    // "persists logout").
    expiresWithSession: () => false,
    // Every code exchange returns a refresh token (no offline_access needed: the spec's
    // clients send no scope), and every refresh rotates it; reusing a rotated one revokes the
    // grant. @see RFC 9700 §4.14.2
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // Revoking any token ends its grant: every token issued under it and the consent (the
    // provider already deletes all the grant's tokens; this also deletes the grant and emits
    // grant.revoked for an access token, as it does for a refresh token). @see RFC 7009 §2.1
    revokeGrantPolicy: () => true,
    // An authorization reuses the grant its sign-in session holds for the client, so a step-up
    // (RFC 6750 §3.1 insufficient_scope, then the old scopes and the new) asks the user only for
    // what is new, and the grant keeps what was approved (ui/interactions.ts adds to it).
    // An authorization that reuses a grant close to its end renews it (see grantTtl).
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId);
      const grant = grantId ? await ctx.oidc.provider.Grant.find(grantId) : undefined;
      if (grant && (grant.exp ?? 0) - epochTime() < grantMinimum) {
        grant.exp = epochTime() + grantTtl;
        await grant.save();
      }
      return grant;
    },
    ttl: {
      // A resource server's JWT lives its declared TTL; the userinfo token ACCESS_TOKEN_TTL.
      AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? config.accessTokenTtl,
      // A machine's token is always for a resource (resource-indicators.ts): it lives that resource's TTL.
      ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? config.accessTokenTtl,
      AuthorizationCode: config.authorizationCodeTtl,
      IdToken: config.idTokenTtl,
      Interaction: 3600,
      Session: SESSION_TTL_SECONDS,
      Grant: grantTtl,
      // Absolute: counted from the code exchange. A rotated token inherits what is left of
      // its predecessor's lifetime (a number here would make rotation sliding). At least 1 s:
      // the predecessor was unexpired when checked, but the clock may have ticked since.
      RefreshToken: (ctx, _token, _client) => {
        const rotated = ctx?.oidc?.entities.RotatedRefreshToken;
        return rotated ? Math.max(1, rotated.remainingTTL) : config.refreshTokenTtl;
      },
    },
    cookies: { keys: keys.cookieKeys, long: cookie, short: cookie },
    jwks: deps.jwks as Configuration['jwks'],
    enabledJWA: {
      clientAuthSigningAlgValues: ASYMMETRIC,
      requestObjectSigningAlgValues: ASYMMETRIC,
      idTokenSigningAlgValues: ASYMMETRIC,
    } as Configuration['enabledJWA'],
    interactions: {
      policy: interactionPolicyWithAccountCheck(),
      url: (_ctx: KoaContextWithOIDC, interaction) => interactionPath(interaction.uid),
    },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: true },
      registration: { enabled: false },
      // RFC 7662 §2.1: introspection needs client authentication; a public client has none.
      introspection: {
        enabled: true,
        allowedPolicy: (ctx, client, token) => {
          if (client.clientAuthMethod === PUBLIC) {
            throw Object.assign(new errors.InvalidClientAuth(), { error_description: 'introspection requires client authentication, which a public client cannot give' });
          }
          return ownToken(ctx, client, token);
        },
      },
      // Another client's token: refused with invalid_request (RFC 7009 §2.1 "the request is
      // refused"), and the token stays valid. Unknown tokens still get 200 (§2.2).
      revocation: {
        enabled: true,
        allowedPolicy: (ctx, client, token) => {
          if (!ownToken(ctx, client, token)) throw new errors.InvalidRequest('client is not authorized to revoke the presented token');
          return true;
        },
      },
      // RFC 6749 §4.4: a confidential client's token for itself, for the clients that registered
      // the grant (clients/client-metadata.ts); it needs a resource (resource-indicators.ts).
      clientCredentials: { enabled: true },
      // OpenID Connect RP-Initiated Logout 1.0 at /api/logout.php (routes.ts), on our pages.
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: (ctx) => deps.logoutPages.confirm(ctx, {
          action: ctx.oidc.urlFor('end_session_confirm'),
          xsrf: String(ctx.oidc.session!.state!.secret),
          clientName: ctx.oidc.client ? ctx.oidc.client.clientName ?? ctx.oidc.client.clientId : undefined,
        }),
        postLogoutSuccessSource: (ctx) => deps.logoutPages.signedOut(ctx, { clientName: ctx.oidc.client ? ctx.oidc.client.clientName ?? ctx.oidc.client.clientId : undefined }),
      },
      // OpenID Connect Back-Channel Logout 1.0: its client metadata (backchannel_logout_uri),
      // discovery and `sid`; the logout tokens themselves go through our outbox (session-end.ts).
      backchannelLogout: { enabled: true },
      pushedAuthorizationRequests: { enabled: false },
      requestObjects: { enabled: false },
      encryption: { enabled: false },
      dPoP: { enabled: false },
      claimsParameter: { enabled: false },
      // RFC 8707: a declared resource gets an RFC 9068 JWT for it alone; others invalid_target.
      resourceIndicators: resourceIndicators(deps.findResource),
      // A client_id that is an https URL names its metadata document, fetched through deps.fetch,
      // cached as its Cache-Control (or Expires) says within CLIENT_METADATA_CACHE_*_SECONDS,
      // checked by the provider and by allowDocumentClient (public or private_key_jwt, the code flow).
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        allowFetch: oneFetchPerRequest,
        allowClient: allowDocumentClient(deps.clientKeys) as never,
        cacheDuration: { min: documents.cacheMinSeconds, max: documents.cacheMaxSeconds },
      },
    },
    fetch: deps.fetch,
    fetchResponseBodyLimits: { 'client_id metadata document': documents.maxBytes, jwks_uri: config.standardClients.keySets.maxBytes },
    formats: JWT_ACCESS_TOKEN_FORMATS,
    // Served at /.well-known/openid-configuration and (RFC 8414) /.well-known/oauth-authorization-server.
    discovery: {
      // RFC 7009 §2.1: a public client may revoke its own tokens with its client_id alone.
      revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, PUBLIC],
      revocation_endpoint_auth_signing_alg_values_supported: ASYMMETRIC,
      introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
      introspection_endpoint_auth_signing_alg_values_supported: ASYMMETRIC,
      // RFC 7591 beside the spec's registration (ui/register.ts, clients/dynamic-registration.ts).
      registration_endpoint: `${config.baseUrl}${REGISTRATION_PATH}`,
    },
  });


  // Stored client_secret is a SHA-256 digest (clients/credentials.ts explains why); compare against it,
  // and against the previous secret's while its grace lasts. A client without one (public) is
  // compared with the decoy and refused, should the provider ever ask.
  provider.Client.prototype.compareClientSecret = function compareClientSecret(this: { clientId: string; clientSecret?: string }, actual: string) {
    const requestId = Provider.ctx?.state?.requestId;
    if (typeof this.clientSecret !== 'string') return (deps.checkClientSecret(this.clientId, actual, DECOY, requestId), false);
    return deps.checkClientSecret(this.clientId, actual, metadataDigests(this as { clientSecret: string }), requestId);
  } as never;

  // Back-channel logout tokens are sent from the durable outbox, with retries (oidc/session-end.ts
  // writes them when a session ends, however it ends), never inline from the end-session request.
  provider.Client.prototype.backchannelLogout = async function backchannelLogout() {} as never;
  // Every ID token carries `sid` (OpenID Connect Back-Channel Logout 1.0 §2.1), whether or not its
  // client registered a backchannel_logout_uri: a client can match a later logout to its session.
  provider.Client.prototype.includeSid = function includeSid() { return true; } as never;

  return provider;
}
