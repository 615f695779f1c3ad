/**
 * One delivery attempt: a signed POST, no redirects followed, the whole attempt (DNS,
 * connect, request, response headers) within `timeoutMs`, and the destination checked by
 * the SSRF guard at connect time.
 *
 * @example const result = await sendAttempt({ url, body, headers }, policy, 10_000, signal);
 */
import http from 'node:http';
import https from 'node:https';
import type { NetworkPolicy } from '../outbound/ssrf-guard.js';
import { addressProblem, guardedLookup, ipLiteral } from '../outbound/ssrf-guard.js';

export interface AttemptResult {
  /** The receiver's HTTP status, when it answered. */
  statusCode?: number;
  /** Why no answer came: refused destination, connection error, timeout. */
  error?: string;
}

const USER_AGENT = 'oauth-service-webhooks/1';

export function sendAttempt(
  request: { url: string; body: string; headers: Record<string, string> },
  policy: NetworkPolicy,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<AttemptResult> {
  const url = new URL(request.url);
  if (policy.httpsOnly && url.protocol !== 'https:') return Promise.resolve({ error: 'refused: only https URLs are allowed' });
  const literal = ipLiteral(url);
  const refused = literal && addressProblem(literal, policy);
  if (refused) return Promise.resolve({ error: refused });

  return new Promise((resolve) => {
    let settled = false;
    const giveUp = new AbortController(); // the lookup gives up with the attempt
    const settle = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      giveUp.abort();
      resolve(result);
    };
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(url, {
      method: 'POST',
      agent: false, // a fresh connection, so every attempt passes the guarded lookup
      lookup: guardedLookup(policy, signal ? AbortSignal.any([signal, giveUp.signal]) : giveUp.signal) as never,
      signal,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'content-length': Buffer.byteLength(request.body),
        ...request.headers,
      },
    }, (res) => {
      settle({ statusCode: res.statusCode ?? 0 });
      res.destroy(); // the body is not needed; nothing is followed
    });
    const timer = setTimeout(() => {
      settle({ error: `no response within ${timeoutMs / 1000} s` });
      req.destroy();
    }, timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => {
      settle({ error: error.name === 'RefusedDestinationError' || error.name === 'LookupError' ? error.message : `${error.code ?? error.name}: ${error.message}` });
    });
    req.end(request.body);
  });
}
