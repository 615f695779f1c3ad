/**
 * Every request, bracketed from its first middleware to its answer: read as coming from its real
 * client to BASE_URL, counted while in flight, given an id, and logged in one access line
 * (method, route, status, duration in ms, request id, client address and, where the request named
 * or authenticated one, the client_id).
 *
 * Read as coming to BASE_URL ({@link publicOrigin}, first of all middleware), because every URL
 * the service publishes must derive from BASE_URL alone: oidc-provider builds the URLs of
 * discovery, redirects and pages from the request (`ctx.oidc.urlFor` resolves against Koa's
 * `ctx.href`: `Host`, `X-Forwarded-Host` behind a trusted proxy, or an absolute request target
 * `GET http://other.example/…`), and a discovery document a cache kept would then send clients'
 * codes and secrets elsewhere. So `Host` is set to BASE_URL's host, `X-Forwarded-Host` dropped,
 * an absolute request target cut to its path; and the client's address is the one TRUST_PROXY
 * says (config/proxy.ts; proxy-addr walks `X-Forwarded-For`), set as Koa's `ctx.ip`, with what a
 * peer that is no trusted proxy says of proxies dropped. The scheme is checked later, after the
 * health checks (http/responses.ts `requireScheme`). @see RFC 8414 §3.3, RFC 9110 §7.2, RFC 9112 §3.2.2
 *
 * In flight ({@link trackInFlight}), for a drained shutdown: the HTTP server only knows
 * connections, and a request whose client hung up has no connection left while its handler still
 * runs (and still uses the stores); this counts handlers, so shutdown can wait for every one of
 * them before it closes the pools. While draining, every response says `Connection: close`, so
 * keep-alive clients open their next connection elsewhere instead of racing the listener's close.
 *
 * The id is the caller's `X-Request-Id` when it is safe to echo and to write into a log line (at
 * most 128 printable ASCII characters), otherwise a fresh one. It is answered in the
 * `X-Request-Id` header and written on every log line of the request, so one request can be
 * followed through the logs by its id.
 *
 * The route is the matched path (`/interaction/:uid/login`), never the raw URL: a query string
 * can carry codes and tokens, and an interaction uid is a session handle. Paths the service does
 * not serve are logged as `unmatched`, so that neither a log line nor a metric label echoes
 * whatever a caller sent. No header is logged.
 *
 * @example const inFlight = trackInFlight(); koa.use(inFlight.middleware).use(accessLog({ logger, knownPaths })); // then ctx.state.requestId (store/request-state.ts `RequestFacts`)
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import proxyAddr from 'proxy-addr';
import type { ProxyTrust } from '../config.js';
import type { RequestOutcome } from '../ops/metrics.js';
import { clientAddress } from './client-address.js';

/** Whether the peer at position `i` (0: the socket's, then X-Forwarded-For from the right) is a proxy we trust. */
type Trusts = (address: string, i: number) => boolean;

function trustOf(trust: ProxyTrust): Trusts | undefined {
  if (trust.kind === 'none') return undefined;
  if (trust.kind === 'hops') return (_address, i) => i < trust.hops;
  return proxyAddr.compile([...trust.addresses]);
}

/** `scheme://authority` of an absolute request target (RFC 9112 §3.2.2). */
const ABSOLUTE_FORM = /^[a-z][a-z\d+.-]*:\/\/[^/?#]*/i;

/** The client's address as TRUST_PROXY says: the socket's peer, or what trusted proxies report. */
function clientIp(req: IncomingMessage, trusts: Trusts | undefined): string {
  const peer = req.socket.remoteAddress ?? '';
  if (!trusts || !trusts(peer, 0)) return peer;
  return proxyAddr(req, trusts);
}

/** Every request as if it came to BASE_URL, from the client TRUST_PROXY names (see the module comment). */
export function publicOrigin({ baseUrl, trustProxy }: { baseUrl: string; trustProxy: ProxyTrust }): Middleware {
  const { host } = new URL(baseUrl);
  const trusts = trustOf(trustProxy);
  return (ctx, next) => {
    const { req } = ctx;
    const headers = req.headers;
    if (!trusts || !trusts(req.socket.remoteAddress ?? '', 0)) {
      // Not from a proxy we trust: what it says of proxies is the client's own word.
      delete headers['x-forwarded-for'];
      delete headers['x-forwarded-proto'];
    }
    ctx.request.ip = clientIp(req, trusts);
    delete headers['x-forwarded-host'];
    headers.host = host;
    const target = ABSOLUTE_FORM.exec(req.url ?? '');
    if (target) {
      const path = req.url!.slice(target[0].length);
      ctx.url = path.startsWith('/') ? path : `/${path}`;
      ctx.originalUrl = ctx.request.originalUrl = ctx.url;
    }
    return next();
  };
}

export const REQUEST_ID_HEADER = 'X-Request-Id';
const MAX_LENGTH = 128;
/** Printable ASCII, space excluded (a space would make ids ambiguous in plain-text tools). */
const PRINTABLE = /^[\x21-\x7e]+$/;

/** The caller's id if acceptable, else undefined. */
export function acceptedRequestId(raw: string | string[] | undefined): string | undefined {
  if (typeof raw !== 'string' || raw.length > MAX_LENGTH || !PRINTABLE.test(raw)) return undefined;
  return raw;
}

export const UNMATCHED_ROUTE = 'unmatched';

/** The route a request matched: the router's pattern, a known fixed path, or `unmatched`. */
export function routeOf(ctx: Context, knownPaths: ReadonlySet<string>): string {
  const matched = (ctx as Context & { _matchedRoute?: string | RegExp })._matchedRoute;
  if (typeof matched === 'string') return matched;
  return knownPaths.has(ctx.path) ? ctx.path : UNMATCHED_ROUTE;
}

/**
 * Names the client a request is about, for its access line and metrics, where the provider does
 * not know it: a token request's client_id before (or without) its authentication, the webhooks
 * API's and the settings page's authenticated client, an interaction's client, a registration's
 * new client, the application a user revoked.
 */
export function noteClient(ctx: Context, clientId: string): void {
  ctx.state.clientId = clientId;
}

/** The client a request is about, when the provider or our own routes identified one. */
export function clientIdOf(ctx: Context): string | undefined {
  const oidc = (ctx as Context & { oidc?: { client?: { clientId?: string }; params?: { client_id?: unknown } } }).oidc;
  const known = oidc?.client?.clientId ?? ctx.state.clientId;
  return typeof known === 'string' ? known : undefined;
}


export interface AccessLogOptions {
  logger: Logger;
  knownPaths: ReadonlySet<string>;
  /** Called once a request is answered (the metrics observe requests here). */
  onResponse?: (outcome: RequestOutcome, ctx: Context) => void;
}

export function accessLog({ logger, knownPaths, onResponse }: AccessLogOptions): Middleware {
  // Redaction goes by field name, and none of this line's fixed fields names a secret: it could
  // never change an access line, and would cost more than the line itself.
  const lines = logger.child({}, { redact: [] });
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const id = acceptedRequestId(ctx.req.headers['x-request-id']) ?? randomUUID();
    ctx.state.requestId = id;
    ctx.set(REQUEST_ID_HEADER, id);
    // Read now: once the response is sent the socket may be gone (a 413 closes the connection).
    const address = clientAddress(ctx);
    let failed = false;
    try {
      await next();
    } catch (error) {
      failed = true; // handleErrors answers every error below; this is the last resort
      throw error;
    } finally {
      const outcome: RequestOutcome = {
        method: ctx.method,
        route: routeOf(ctx, knownPaths),
        status: failed ? 500 : ctx.status,
        durationMs: Number(process.hrtime.bigint() - started) / 1e6,
        clientId: clientIdOf(ctx),
      };
      lines.info({
        request_id: ctx.state.requestId,
        method: outcome.method,
        route: outcome.route,
        status: outcome.status,
        duration_ms: Math.round(outcome.durationMs * 1000) / 1000,
        client_address: address,
        client_id: outcome.clientId,
      }, 'request');
      onResponse?.(outcome, ctx);
    }
  };
}

export interface InFlight {
  readonly middleware: Middleware;
  /** Handlers running now. */
  readonly count: number;
  readonly draining: boolean;
  startDraining(): void;
  /** Resolves true once nothing is in flight, or false after `timeoutMs` with some still running. */
  settled(timeoutMs: number): Promise<boolean>;
}

export function trackInFlight(): InFlight {
  let count = 0;
  let draining = false;
  let waiters: (() => void)[] = [];

  const done = () => {
    count -= 1;
    if (count > 0) return;
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };

  return {
    async middleware(ctx, next) {
      count += 1;
      try {
        if (draining) ctx.set('Connection', 'close');
        await next();
      } finally {
        if (draining) ctx.set('Connection', 'close');
        done();
      }
    },
    get count() { return count; },
    get draining() { return draining; },
    startDraining() { draining = true; },
    settled(timeoutMs) {
      if (count === 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((wake) => wake !== onIdle);
          resolve(false);
        }, timeoutMs);
        const onIdle = () => {
          clearTimeout(timer);
          resolve(true);
        };
        waiters.push(onIdle);
      });
    },
  };
}
