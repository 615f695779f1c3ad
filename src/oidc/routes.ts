/**
 * The spec's fixed paths, set through the provider's own `routes` option so that discovery
 * advertises them. The provider serves only what is listed here and its discovery documents:
 * the route table (http/route-table.ts) hands it these paths and no other, so routes it keeps at
 * their defaults whatever its features say (`/session/end/confirm`) are our 404.
 *
 * @see ../shared/spec/oauth-service-spec.md "Endpoints"
 */
export const ROUTES = {
  authorization: '/api/authorize.php',
  token: '/api/token.php',
  userinfo: '/api/userinfo.php',
  jwks: '/api/jwks.php',
  /** RFC 7009 token revocation. */
  revocation: '/api/revoke.php',
  /** RFC 7662 token introspection. */
  introspection: '/api/introspect.php',
  /** OpenID Connect RP-Initiated Logout 1.0: discovery's `end_session_endpoint` (GET and POST). */
  end_session: '/api/logout.php',
} as const;

/**
 * The provider's two other logout paths, which it derives from `end_session` (its defaults are
 * `/session/end/confirm` and `/session/end/success`, never routed here): where the logout page's
 * form posts the user's answer, and the "signed out" page shown when no registered
 * post_logout_redirect_uri was given.
 */
export const END_SESSION_CONFIRM_PATH = `${ROUTES.end_session}/confirm`;
export const END_SESSION_SUCCESS_PATH = `${ROUTES.end_session}/success`;

/**
 * The registration page, and RFC 7591's registration endpoint in the same place (discovery's
 * `registration_endpoint`): the two dialects are told apart by `redirect_uris` (ui/register.ts).
 */
export const REGISTRATION_PATH = '/api/register.php';

/** Where the provider serves its metadata (RFC 8414 and OpenID Connect Discovery). */
export const DISCOVERY_PATHS: readonly string[] = [
  '/.well-known/oauth-authorization-server',
  '/.well-known/openid-configuration',
];

/** Login and consent pages live under the interaction cookie's path (`/interaction/<uid>`). */
export const interactionPath = (uid: string) => `/interaction/${uid}`;
/** The same, as a router's pattern. */
export const INTERACTION_PATHS = interactionPath(':uid');
