/**
 * An https server on 127.0.0.1 that serves Client ID Metadata Documents (or anything else) by
 * path, counting the requests for each: each route answers a body (JSON-encoded unless a
 * string), with headers, after an optional delay.
 *
 * @example const docs = await startDocumentServer(tls); docs.route('/client.json', { body: { client_id: docs.url('/client.json'), … } });
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Certificates } from './tls.js';

export interface Route {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
  delayMs?: number;
}

export interface DocumentServer {
  url(path: string): string;
  route(path: string, route: Route): void;
  /** How many requests each path received. */
  readonly hits: Map<string, number>;
  /** The bodies POSTed to each path, in order. */
  readonly posted: Map<string, string[]>;
  close(): Promise<void>;
}

export async function startDocumentServer(tls: Certificates): Promise<DocumentServer> {
  const routes = new Map<string, Route>();
  const hits = new Map<string, number>();
  const posted = new Map<string, string[]>();
  const server = https.createServer({ key: tls.key, cert: tls.cert }, async (req, res) => {
    const path = new URL(req.url ?? '/', 'https://127.0.0.1').pathname;
    if (req.method === 'POST') {
      let body = '';
      for await (const chunk of req) body += String(chunk);
      posted.set(path, [...(posted.get(path) ?? []), body]);
    }
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes.get(path);
    const answer = () => {
      if (!route) return res.writeHead(404).end();
      const body = typeof route.body === 'string' ? route.body : JSON.stringify(route.body);
      res.writeHead(route.status ?? 200, { 'content-type': 'application/json', ...route.headers }).end(body);
    };
    if (route?.delayMs) setTimeout(answer, route.delayMs).unref();
    else answer();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path) => `${origin}${path}`,
    route: (path, route) => { routes.set(path, route); },
    hits,
    posted,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
