/**
 * The provider's `fetch` (its outgoing requests: Client ID Metadata Documents), through the same
 * outbound guard as webhooks (webhooks/ssrf-guard.ts): https only, no credentials, an IP literal
 * or every DNS answer outside loopback, private and shared ranges unless
 * CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS, never link-local or metadata addresses (checked again
 * at connect time, against DNS rebinding); no redirect followed; at most `maxBytes` of body; the
 * whole exchange, body included, within `timeoutMs`. Certificates are checked against Node's
 * trust store, which NODE_EXTRA_CA_CERTS extends.
 *
 * @example provider option: fetch: guardedFetch({ allowPrivate: false, timeoutMs: 5000, maxBytes: 5120 })
 */
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { addressProblem, guardedLookup, ipLiteral, urlProblem } from '../webhooks/ssrf-guard.js';
import type { NetworkPolicy } from '../webhooks/ssrf-guard.js';
import { MetadataFetchError } from './metadata-document.js';

export interface FetchBounds {
  readonly allowPrivate: boolean;
  readonly timeoutMs: number;
  readonly maxBytes: number;
}

const USER_AGENT = 'oauth-service-client-metadata/1';
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
  const policy: NetworkPolicy = { httpsOnly: true, allowPrivate: bounds.allowPrivate };
  return (input, init = {}) => new Promise<Response>((resolve, reject) => {
    const raw = String(input);
    const refused = urlProblem(raw, policy);
    if (refused) return reject(new MetadataFetchError(refused));
    const url = new URL(raw);
    const literal = ipLiteral(url);
    const literalProblem = literal && addressProblem(literal, policy);
    if (literalProblem) return reject(new MetadataFetchError(`url is refused: ${literalProblem}`));

    let body: ReadableStreamDefaultController<Uint8Array> | undefined;
    let done = false;
    /** Ends the exchange with `error`: the fetch rejects, or (once answered) its body fails. */
    const fail = (error: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (body) body.error(error);
      else reject(error);
      req.destroy();
    };
    const req = https.request(url, {
      method: init.method ?? 'GET',
      headers: { ...Object.fromEntries(new Headers(init.headers)), 'user-agent': USER_AGENT },
      agent: false, // a fresh connection: every fetch passes the guarded lookup
      lookup: guardedLookup(policy) as never,
    }, (res) => {
      const length = Number(res.headers['content-length']);
      if (length > bounds.maxBytes) return fail(new MetadataFetchError(`the document is ${length} bytes, more than ${bounds.maxBytes} (CLIENT_METADATA_MAX_BYTES)`));
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 599) return fail(new MetadataFetchError(`its server answered status ${status}`));
      let received = 0;
      const stream = NULL_BODY.has(status) ? null : new ReadableStream<Uint8Array>({
        start(controller) { body = controller; },
        cancel() { done = true; clearTimeout(timer); req.destroy(); },
      });
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > bounds.maxBytes) fail(new MetadataFetchError(`the document is larger than ${bounds.maxBytes} bytes (CLIENT_METADATA_MAX_BYTES)`));
        else if (!done) body?.enqueue(new Uint8Array(chunk));
      });
      res.on('end', () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        body?.close();
      });
      res.on('error', (error) => fail(error));
      resolve(new Response(stream, { status, headers: headersOf(res) }));
    });
    // The whole exchange, the body's last byte included.
    const timer = setTimeout(() => fail(new MetadataFetchError(`no complete answer within ${bounds.timeoutMs} ms (CLIENT_METADATA_TIMEOUT_MS)`)), bounds.timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => {
      fail(error.name === 'RefusedDestinationError' ? new MetadataFetchError(`url is refused: ${error.message}`)
        : new MetadataFetchError(`${url.host} could not be reached (${error.code ?? error.message})`));
    });
    req.end();
  });
}
