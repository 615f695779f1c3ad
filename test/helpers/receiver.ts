/**
 * A real HTTP server that receives webhooks, for tests: it records every request and
 * answers with whatever `respond` says (a status, or 'hang' to never answer).
 *
 * @example const receiver = await startReceiver(); ...; const hit = await receiver.next((h) => h.event.type === 'token.issued');
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Hit {
  path: string;
  method: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  event: { id: string; type: string; created_at: string; data: Record<string, unknown> };
  receivedAt: number;
}

export type Answer = number | 'hang' | { status: number; headers?: Record<string, string>; delayMs?: number };

export interface Receiver {
  readonly origin: string;
  url(path?: string): string;
  readonly hits: Hit[];
  /** Decides each answer (default 200). */
  respond: (hit: Hit, index: number) => Answer;
  /** Resolves with the first hit (already received or to come) that matches, or rejects after `timeoutMs`. */
  next(match: (hit: Hit) => boolean, timeoutMs?: number): Promise<Hit>;
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const waiters: { match: (hit: Hit) => boolean; resolve: (hit: Hit) => void }[] = [];
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    origin: '',
    hits: [],
    respond: () => 200,
    url: (path = '/hook') => `${receiver.origin}${path}`,
    next(match, timeoutMs = 10_000) {
      const found = receiver.hits.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching webhook within ${timeoutMs} ms; got ${receiver.hits.map((h) => h.event?.type).join(', ') || 'none'}`)), timeoutMs);
        waiters.push({ match, resolve: (hit) => { clearTimeout(timer); resolve(hit); } });
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let event: Hit['event'];
      try {
        event = JSON.parse(body) as Hit['event'];
      } catch {
        event = { id: '', type: '', created_at: '', data: {} };
      }
      const hit: Hit = { path: req.url ?? '', method: req.method ?? '', headers: req.headers, body, event, receivedAt: Date.now() };
      const index = receiver.hits.push(hit) - 1;
      const answer = receiver.respond(hit, index);
      if (answer === 'hang') {
        hanging.add(res);
      } else if (typeof answer === 'number') {
        res.writeHead(answer).end();
      } else {
        setTimeout(() => res.writeHead(answer.status, answer.headers ?? {}).end(), answer.delayMs ?? 0);
      }
      for (const waiter of [...waiters]) {
        if (waiter.match(hit)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(hit);
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  (receiver as { origin: string }).origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

/** Verifies a hit as a receiver would, with the `standardwebhooks` package; throws if it fails. */
export function verify(hit: Hit, secret: string): unknown {
  return new Webhook(secret).verify(hit.body, {
    'webhook-id': String(hit.headers['webhook-id']),
    'webhook-timestamp': String(hit.headers['webhook-timestamp']),
    'webhook-signature': String(hit.headers['webhook-signature']),
  });
}

/** Whether a receiver that knows only `secret` accepts the hit (its signature and timestamp verify). */
export function verifies(hit: Hit, secret: string): boolean {
  try {
    verify(hit, secret);
    return true;
  } catch {
    return false;
  }
}

/** POST/GET/DELETE /api/webhooks.php with the client's Basic credentials. */
export async function webhooksApi(baseUrl: string, client: { client_id: string; client_secret: string }, init: { method?: string; query?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {}) {
  const url = new URL('/api/webhooks.php', baseUrl);
  for (const [key, value] of Object.entries(init.query ?? {})) url.searchParams.set(key, value);
  const res = await fetch(url, {
    method: init.method ?? (init.json === undefined ? 'GET' : 'POST'),
    headers: {
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
      // Every POST is JSON, body or not (a cross-site page cannot send that without a preflight).
      ...(init.json === undefined && init.method !== 'POST' ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}
