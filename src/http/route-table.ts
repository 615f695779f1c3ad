/**
 * Every path the service answers, declared once: its methods, how its errors read, its CORS, its
 * rate-limit budget, how long the public may keep it, and the name of its handler (bound to the
 * handler in app.ts). The middleware's lists (the methods of each exact path, the JSON error
 * paths, the access log's known paths, CORS, the token paths, the cache ages, the provider's
 * paths) and the routers are all derived from it (http/route-lists.ts); `openapi.json` describes
 * the same paths and methods (test/http/route-table.test.ts).
 *
 * @see ../shared/spec/oauth-service-spec.md "Endpoints", "Limits"
 * @example const router = routerOf(ROUTE_TABLE.filter(limited), handlers);
 */
import { HEALTH_PATH, LIVE_PATH, READY_PATH } from './health.js';
import { OPENAPI_PATH } from './openapi-document.js';
import { STYLESHEET_PATH } from './static-assets.js';
import { DISCOVERY_PATHS, END_SESSION_CONFIRM_PATH, END_SESSION_SUCCESS_PATH, INTERACTION_PATHS, REGISTRATION_PATH, ROUTES } from '../oidc/routes.js';
import { FORGOT_PATH, RESET_PATH, VERIFY_PATH } from '../ui/account-links.js';
import { APPLICATIONS_PATH } from '../ui/applications.js';
import { SETTINGS_PATH } from '../ui/settings-session.js';
import { WEBHOOKS_PATH } from '../ui/webhooks-api.js';

/** The methods a row answers; HEAD comes with GET. */
export type Method = 'GET' | 'POST' | 'DELETE';

export interface Route {
  /** The exact path; another spelling of it is a 404 and another method a 405 (http/exact-paths.ts). */
  readonly path: string;
  readonly methods: readonly Method[];
  /** Bound to a handler (a middleware, or one per method) in app.ts. */
  readonly handler: string;
  /**
   * `json`: every error answered here is the spec's JSON body (an API); `page`: a page, unless the
   * request's body or Accept asks for JSON (ui/error-page.ts).
   */
  readonly errors: 'json' | 'page';
  /**
   * `open`: any origin may use these methods from a page, their preflight answered by us;
   * `provider`: the provider answers CORS here, we make readable the errors it never saw
   * (http/responses.ts `browserCors`). None: no CORS.
   */
  readonly cors?: { readonly open: readonly Method[] } | 'provider';
  /**
   * `token`: TOKEN_RATE_LIMIT_PER_MINUTE by address and by client_id, spent together by the
   * route itself for its methods (oidc/token-endpoint.ts), by the limiter for any other;
   * `address`: RATE_LIMIT_PER_MINUTE by address; `unlimited`: answered before the limits (and
   * before the scheme check), only at its methods: any other spelling or method goes on to a 404.
   */
  readonly budget: 'token' | 'address' | 'unlimited';
  /** A public document: how long a client or a cache may keep its 200 (`Cache-Control: public`). */
  readonly maxAgeSeconds?: number;
  /** What our handler leaves here (other methods, the provider's CORS preflights) goes to the provider. */
  readonly provider?: true;
}

/** Discovery changes with a deployment's configuration only. */
const METADATA_MAX_AGE_SECONDS = 3600;
/** Well under keys:rotate's default --publish-ahead (1 h), so a client holds a new key before it signs. */
const JWKS_MAX_AGE_SECONDS = 300;
const OPENAPI_MAX_AGE_SECONDS = 300;
const STYLESHEET_MAX_AGE_SECONDS = 3600;

const api = { errors: 'json', budget: 'address' } as const;
const page = { errors: 'page', budget: 'address' } as const;

export const ROUTE_TABLE = [
  // The provider's endpoints (oidc/routes.ts), each with our glue in front where the spec reshapes it.
  { path: ROUTES.authorization, methods: ['GET'], handler: 'authorize', ...page, provider: true },
  { path: ROUTES.token, methods: ['POST'], handler: 'token', errors: 'json', budget: 'token', cors: 'provider', provider: true },
  { path: ROUTES.userinfo, methods: ['GET', 'POST'], handler: 'userinfo', ...api, cors: 'provider', provider: true },
  { path: ROUTES.jwks, methods: ['GET'], handler: 'provider', ...page, cors: 'provider', maxAgeSeconds: JWKS_MAX_AGE_SECONDS, provider: true },
  { path: ROUTES.revocation, methods: ['POST'], handler: 'provider', ...api, cors: 'provider', provider: true },
  { path: ROUTES.introspection, methods: ['POST'], handler: 'introspect', ...api, provider: true },
  { path: ROUTES.end_session, methods: ['GET', 'POST'], handler: 'logout', ...page, provider: true },
  { path: END_SESSION_CONFIRM_PATH, methods: ['POST'], handler: 'logoutConfirm', ...page, provider: true },
  { path: END_SESSION_SUCCESS_PATH, methods: ['GET'], handler: 'logoutSuccess', ...page, provider: true },
  ...DISCOVERY_PATHS.map((path) => ({ path, methods: ['GET'], handler: 'discovery', ...page, cors: 'provider', maxAgeSeconds: METADATA_MAX_AGE_SECONDS, provider: true } as const)),
  // Our pages and APIs (ui/).
  { path: REGISTRATION_PATH, methods: ['GET', 'POST'], handler: 'register', ...page, cors: { open: ['POST'] } },
  { path: SETTINGS_PATH, methods: ['GET', 'POST'], handler: 'settings', ...page },
  { path: WEBHOOKS_PATH, methods: ['GET', 'POST', 'DELETE'], handler: 'webhooks', ...api },
  { path: APPLICATIONS_PATH, methods: ['GET', 'POST'], handler: 'applications', ...page },
  { path: FORGOT_PATH, methods: ['GET', 'POST'], handler: 'forgotPassword', ...page },
  { path: RESET_PATH, methods: ['GET', 'POST'], handler: 'resetPassword', ...page },
  { path: VERIFY_PATH, methods: ['GET'], handler: 'verifyEmail', ...page },
  { path: OPENAPI_PATH, methods: ['GET'], handler: 'openapi', ...page, maxAgeSeconds: OPENAPI_MAX_AGE_SECONDS },
  // Answered before the limits: health checks and the pages' stylesheet.
  { path: HEALTH_PATH, methods: ['GET'], handler: 'health', errors: 'page', budget: 'unlimited' },
  { path: LIVE_PATH, methods: ['GET'], handler: 'health', errors: 'page', budget: 'unlimited' },
  { path: READY_PATH, methods: ['GET'], handler: 'health', errors: 'page', budget: 'unlimited' },
  { path: STYLESHEET_PATH, methods: ['GET'], handler: 'stylesheet', errors: 'page', budget: 'unlimited', maxAgeSeconds: STYLESHEET_MAX_AGE_SECONDS },
] as const satisfies readonly Route[];

/** The handlers app.ts binds, by the names the table gives them. */
export type HandlerName = (typeof ROUTE_TABLE)[number]['handler'];

/**
 * Paths below a prefix, each family answered by a router of its own that matches its paths
 * (their letters and trailing slashes as that router does) and is mounted after the table's.
 * Their errors are pages and they spend the address budget; they are not exact paths.
 */
export const ROUTE_FAMILIES = [
  /** The provider resumes an authorization after login and consent (its own router, any method). */
  { under: `${ROUTES.authorization}/:uid`, handler: 'authorizeResume' },
  /** The login and consent pages (ui/interactions.ts): GET `/`, POST `/login`, `/confirm`, `/abort`. */
  { under: INTERACTION_PATHS, handler: 'interaction' },
] as const;

export type FamilyName = (typeof ROUTE_FAMILIES)[number]['handler'];
