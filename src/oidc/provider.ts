/**
 * oidc-provider configured for the spec: the authorization-code flow only, confidential
 * clients (client_secret_post, client_secret_basic), opaque access tokens, PKCE (S256) when a
 * client uses it. Everything here is the provider's own configuration; the few request
 * shapes it cannot express are in spec-glue.ts.
 *
 * @see https://github.com/panva/node-oidc-provider/blob/main/docs/README.md
 */
import Provider from 'oidc-provider';
import type { Configuration, FindAccount, KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../config.js';
import type { Keys } from '../store/keys.js';
import type { AdapterFor } from './adapter.js';
import { CLAIMS } from './find-account.js';
import { interactionPath, ROUTES } from './routes.js';

export interface ProviderDependencies {
  config: Config;
  keys: Keys;
  adapters: AdapterFor;
  findAccount: FindAccount;
  /** Renders an error that must not go back to the client (untrusted client or redirect_uri). */
  renderError: NonNullable<Configuration['renderError']>;
  /** Compares a presented client secret with the stored digest. */
  verifyClientSecret: (presented: string, storedDigest: string) => boolean;
}

/** Signing algorithms without HS*: client_secret holds a digest, so no key may derive from it. */
const ASYMMETRIC = ['RS256', 'PS256', 'ES256', 'EdDSA'];

export function createProvider(deps: ProviderDependencies): Provider {
  const { config, keys } = deps;
  const cookie = { httpOnly: true, sameSite: 'lax', secure: config.secureCookies, signed: true } as const;

  const provider = new Provider(config.baseUrl, {
    adapter: deps.adapters as unknown as Configuration['adapter'],
    findAccount: deps.findAccount,
    renderError: deps.renderError,
    routes: ROUTES,
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_post', 'client_secret_basic'],
    scopes: ['openid', 'profile', 'email'],
    claims: CLAIMS,
    // A PKCE challenge is verified whenever the client sent one; clients without PKCE work.
    // Only S256 exists in oidc-provider 9. @see RFC 7636 §4.6, RFC 9700 §2.1.1
    pkce: { required: () => false },
    // The spec's code has no redirect_uri at the token endpoint; the provider fills in a
    // client's single registered URI. spec-glue.ts still demands it at authorization.
    allowOmittingSingleRegisteredRedirectUri: true,
    // A code and its tokens live for their own TTL, not for the login session's. The default
    // binds them to the session (unless offline_access), and without Redis sessions are in
    // process memory: a restart would void every issued access token.
    expiresWithSession: () => false,
    ttl: {
      AccessToken: config.accessTokenTtl,
      AuthorizationCode: config.authorizationCodeTtl,
      IdToken: 3600,
      Interaction: 3600,
      Session: 14 * 24 * 3600,
      Grant: 14 * 24 * 3600,
    },
    cookies: { keys: keys.cookieKeys, long: cookie, short: cookie },
    jwks: keys.jwks as Configuration['jwks'],
    enabledJWA: {
      clientAuthSigningAlgValues: ASYMMETRIC,
      requestObjectSigningAlgValues: ASYMMETRIC,
      idTokenSigningAlgValues: ASYMMETRIC,
    } as Configuration['enabledJWA'],
    interactions: { url: (_ctx: KoaContextWithOIDC, interaction) => interactionPath(interaction.uid) },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: true },
      registration: { enabled: false },
      introspection: { enabled: false },
      revocation: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      requestObjects: { enabled: false },
      encryption: { enabled: false },
      dPoP: { enabled: false },
      claimsParameter: { enabled: false },
    },
    discovery: { service_documentation: `${config.baseUrl}/` },
  });

  provider.proxy = config.trustProxy;

  // Stored client_secret is a SHA-256 digest (clients/secret.ts explains why); compare against it.
  provider.Client.prototype.compareClientSecret = function compareClientSecret(this: { clientSecret: string }, actual: string) {
    return deps.verifyClientSecret(actual, this.clientSecret);
  } as never;

  return provider;
}
