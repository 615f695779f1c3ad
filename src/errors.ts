/**
 * The wire errors: the spec's codes, their statuses, and the one mapping from the
 * provider's codes to ours. Every JSON error the service sends is `{error, error_description}`.
 *
 * @see ../shared/spec/oauth-service-spec.md "Errors"
 */
import type { Context } from 'koa';
import { errors } from 'oidc-provider';

/** The spec's table, plus the standard codes the provider may still answer with. */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_code: 400,
  invalid_token: 401,
  invalid_grant: 400,
  unsupported_grant_type: 400,
  /** RFC 6749 §5.2: an authenticated client asked for a grant type it did not register or cannot have. */
  unauthorized_client: 400,
  unsupported_response_type: 400,
  invalid_scope: 400,
  /** RFC 8707 §2: a `resource` that names no declared resource server. */
  invalid_target: 400,
  /** RFC 7591 §3.2.2: a registration's redirect URIs, or its other metadata, cannot be used. */
  invalid_redirect_uri: 400,
  invalid_client_metadata: 400,
  /** RFC 7009 §2.2.1: a resource's JWT access token cannot be revoked itself (revoke its grant's refresh token). */
  unsupported_token_type: 400,
  access_denied: 403,
  insufficient_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  too_many_requests: 429,
  server_error: 500,
  temporarily_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorBody {
  error: string;
  error_description: string;
}

/** Sends an error body with its status, as JSON or as a page (ui/error-page.ts decides). */
export type ErrorResponder = (ctx: Context, body: ErrorBody, status: number) => void;

/** An error our own code raises on purpose; its message is safe to show. */
export class ServiceError extends Error {
  readonly status: number;

  constructor(readonly code: ErrorCode, description: string, status: number = ERROR_STATUS[code]) {
    super(description);
    this.name = 'ServiceError';
    this.status = status;
  }

  get body(): ErrorBody {
    return { error: this.code, error_description: this.message };
  }
}

/** Which store did not answer in time (or refused). */
export type StoreName = 'database' | 'redis';

/** Seconds a client should wait before retrying a 503 (RFC 9110 §10.2.3). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/**
 * A store (PostgreSQL, Redis) that is down, hung or refusing: the request is answered 503
 * `temporarily_unavailable` with `Retry-After` (RFC 6749 §4.1.2.1 names the code; RFC 9110
 * §15.6.4 the status), never 500. It is an oidc-provider error marked `expose`, so the
 * provider answers it as it is (a 5xx it would otherwise hide behind "server_error"), and at
 * the authorization endpoint redirects it to a client and redirect_uri it already trusts.
 */
export class StoreUnavailableError extends errors.OIDCProviderError {
  constructor(readonly store: StoreName | undefined, cause?: unknown) {
    super(503, 'temporarily_unavailable', { cause });
    this.name = 'StoreUnavailableError';
    this.expose = true;
    this.error_description = 'the service is temporarily unable to reach its storage; retry shortly';
  }
}

/**
 * Provider codes renamed for the spec. The provider says `invalid_redirect_uri` (an RFC 7591
 * code) of an authorization request's redirect_uri, which is an invalid parameter there, i.e.
 * `invalid_request` (RFC 6749 §4.1.2.1). Registration (clients/dynamic-registration.ts) answers
 * RFC 7591's own codes with its own errors, which this does not rename.
 */
const FROM_PROVIDER: Record<string, string> = {
  invalid_redirect_uri: 'invalid_request',
};

export function specErrorCode(providerCode: string): string {
  return FROM_PROVIDER[providerCode] ?? providerCode;
}

/** The spec's four codes carry the spec's status wherever they appear; others keep theirs. */
const SPEC_CODES = new Set(['invalid_request', 'invalid_client', 'invalid_code', 'invalid_token']);

export function specStatus(code: string, status: number): number {
  return SPEC_CODES.has(code) ? ERROR_STATUS[code as ErrorCode] : status;
}
