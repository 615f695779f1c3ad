/**
 * One origin for everything the service publishes: BASE_URL, whatever a request says.
 * oidc-provider builds every URL in discovery, in redirects and in pages from the request
 * (`ctx.oidc.urlFor` resolves against Koa's `ctx.href`: `Host`, `X-Forwarded-Host` behind a
 * trusted proxy, or an absolute request target `GET http://other.example/…`), and a discovery
 * document a cache kept would then send clients' codes and secrets elsewhere. So every request is
 * answered as if it came to BASE_URL's host, and refused (400) if it did not come over BASE_URL's
 * scheme: answering an https service's pages over http would set its Secure cookies on a
 * connection that cannot carry them (and did, as a 500).
 *
 * - {@link publicOrigin}, first of all middleware: the client's address by TRUST_PROXY
 *   (config/proxy.ts; proxy-addr walks `X-Forwarded-For`), set as Koa's `ctx.ip`; headers an
 *   untrusted peer sent about proxies dropped; `Host` set to BASE_URL's host, `X-Forwarded-Host`
 *   dropped, an absolute request target cut to its path.
 * - {@link requireScheme}, after the health checks (a load balancer probes them over plain http):
 *   the scheme Koa sees (TLS, or a trusted proxy's first `X-Forwarded-Proto`) must be BASE_URL's.
 *
 * @see RFC 8414 §3.3 (the issuer and the metadata's URLs), RFC 9110 §7.2 (Host), §7.1 (absolute-form)
 * @example koa.use(publicOrigin(config)); … koa.use(requireScheme(config.baseUrl));
 */
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import proxyAddr from 'proxy-addr';
import type { ProxyTrust } from '../config.js';
import { ServiceError } from '../errors.js';

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
export function clientIp(req: IncomingMessage, trusts: Trusts | undefined): string {
  const peer = req.socket.remoteAddress ?? '';
  if (!trusts || !trusts(peer, 0)) return peer;
  return proxyAddr(req, trusts);
}

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

export function requireScheme(baseUrl: string): Middleware {
  const scheme = new URL(baseUrl).protocol.slice(0, -1);
  return (ctx, next) => {
    if (ctx.protocol !== scheme) {
      throw new ServiceError('invalid_request', `This service is served at ${baseUrl} only: send requests over ${scheme}.`);
    }
    return next();
  };
}
