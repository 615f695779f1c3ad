/**
 * The provider's `fetch` (its outgoing requests: Client ID Metadata Documents), through the
 * outbound guard (ssrf-guard.ts): https only, no credentials, an IP literal or every DNS answer
 * outside loopback, private and shared ranges unless private networks are allowed, never
 * link-local or metadata addresses (checked again at connect time, against DNS rebinding); names
 * looked up by the policy's bounded lookup (host-lookup.ts), which gives up with the request; no
 * redirect followed; at most `maxBytes` of body; the whole exchange, body included, within
 * `timeoutMs`. Certificates are checked against Node's trust store, which NODE_EXTRA_CA_CERTS extends.
 *
 * A failure is an {@link OutboundFetchError}: its `kind` is what a person may be told (the error
 * page says only that), its `detail` the network's own words, for the log.
 *
 * @example provider option: fetch: guardedFetch({ policy, timeoutMs: 5000, maxBytes: 5120 })
 */
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { addressProblem, guardedLookup, ipLiteral, urlProblem } from './ssrf-guard.js';
import type { NetworkPolicy } from './ssrf-guard.js';

export interface FetchBounds {
  /** Where it may go and how names are looked up; https is required whatever it says. */
  readonly policy: NetworkPolicy;
  readonly timeoutMs: number;
  readonly maxBytes: number;
}

/** What went wrong, as a person may be told it. */
export type FetchFailure = 'destination not allowed' | 'unreachable' | 'too slow' | 'too large' | 'bad status';

/** Why an outbound fetch failed: `message` is safe to show (`kind` and our own bounds); `detail` goes to the log only. */
export class OutboundFetchError extends Error {
  override name = 'OutboundFetchError';
  constructor(readonly kind: FetchFailure, message: string, readonly detail: string = message) {
    super(message);
  }
}

const USER_AGENT = 'oauth-service/1';
/** Statuses whose response has no body (WHATWG Fetch "null body status"). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function headersOf(res: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value !== undefined && name !== 'set-cookie') headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

export function guardedFetch(bounds: FetchBounds): (input: string | URL, init?: { method?: string; headers?: Headers | Record<string, string> }) => Promise<Response> {
  const policy: NetworkPolicy = { ...bounds.policy, httpsOnly: true };
  return (input, init = {}) => new Promise<Response>((resolve, reject) => {
    const raw = String(input);
    const refused = urlProblem(raw, policy);
    if (refused) return reject(new OutboundFetchError('destination not allowed', refused.startsWith('destination not allowed') ? refused : `destination not allowed: ${refused}`));
    const url = new URL(raw);
    const literal = ipLiteral(url);
    const literalProblem = literal && addressProblem(literal, policy);
    if (literalProblem) return reject(new OutboundFetchError('destination not allowed', literalProblem));

    let body: ReadableStreamDefaultController<Uint8Array> | undefined;
    let done = false;
    const giveUp = new AbortController(); // the lookup gives up with the exchange
    /** Ends the exchange with `error`: the fetch rejects, or (once answered) its body fails. */
    const fail = (error: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      giveUp.abort();
      if (body) body.error(error);
      else reject(error);
      req.destroy();
    };
    const tooLarge = () => new OutboundFetchError('too large', `the document is larger than ${bounds.maxBytes} bytes`);
    const req = https.request(url, {
      method: init.method ?? 'GET',
      headers: { ...Object.fromEntries(new Headers(init.headers)), 'user-agent': USER_AGENT },
      agent: false, // a fresh connection: every fetch passes the guarded lookup
      lookup: guardedLookup(policy, giveUp.signal) as never,
    }, (res) => {
      const length = Number(res.headers['content-length']);
      if (length > bounds.maxBytes) return fail(tooLarge());
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 599) return fail(new OutboundFetchError('bad status', `its server answered status ${status}`));
      let received = 0;
      const stream = NULL_BODY.has(status) ? null : new ReadableStream<Uint8Array>({
        start(controller) { body = controller; },
        cancel() { done = true; clearTimeout(timer); req.destroy(); },
      });
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > bounds.maxBytes) fail(tooLarge());
        else if (!done) body?.enqueue(new Uint8Array(chunk));
      });
      res.on('end', () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        body?.close();
      });
      res.on('error', (error) => fail(new OutboundFetchError('unreachable', 'the connection to its server failed', error.message)));
      resolve(new Response(stream, { status, headers: headersOf(res) }));
    });
    // The whole exchange, the body's last byte included.
    const timer = setTimeout(() => fail(new OutboundFetchError('too slow', `no complete answer within ${bounds.timeoutMs} ms`)), bounds.timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException & { resolved?: string }) => {
      if (error.name === 'RefusedDestinationError') {
        fail(new OutboundFetchError('destination not allowed', error.message, `${error.message} (${error.resolved ?? 'address unknown'})`));
      } else if (error.code === 'ETIMEOUT' || error.code === 'EBUSY') {
        fail(new OutboundFetchError('too slow', `${url.hostname} could not be looked up in time`, `${error.code}: ${error.message}`));
      } else {
        fail(new OutboundFetchError('unreachable', `${url.host} could not be reached`, `${error.code ?? error.name}: ${error.message}`));
      }
    });
    req.end();
  });
}
