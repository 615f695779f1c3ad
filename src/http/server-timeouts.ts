/**
 * Bounds on how long a client may hold a connection without finishing its request, so slow
 * or unfinished requests (slowloris) cannot tie up the server: headers within
 * HTTP_HEADERS_TIMEOUT_MS, the whole request within HTTP_REQUEST_TIMEOUT_MS (both answered
 * 408 and closed), an idle keep-alive connection closed after HTTP_KEEP_ALIVE_TIMEOUT_MS.
 *
 * @see https://nodejs.org/api/http.html#httpcreateserveroptions-requestlistener
 * @example http.createServer(serverOptions(config.timeouts), app.callback());
 */
import type http from 'node:http';
import type { Timeouts } from '../config.js';

/** Node checks the two request timeouts on this interval (30 s by default, too coarse for a 10 s bound). */
const CHECK_INTERVAL_MS = 1000;

export function serverOptions(timeouts: Timeouts): http.ServerOptions {
  return {
    headersTimeout: timeouts.httpHeadersMs,
    requestTimeout: timeouts.httpRequestMs,
    keepAliveTimeout: timeouts.httpKeepAliveMs,
    connectionsCheckingInterval: Math.min(CHECK_INTERVAL_MS, timeouts.httpHeadersMs),
  };
}
