/**
 * The metrics listener: `GET /metrics` in the Prometheus text format on METRICS_PORT,
 * a listener of its own so that metrics are never served on the public port. Anything else: 404.
 * It listens on METRICS_HOST (loopback by default): `/metrics` has no authentication and names
 * client ids, so only an operator opens it to a scraper.
 *
 * @example const server = await startMetricsServer(metrics.registry, { port: config.metricsPort, host: config.metricsHost }); … await server.close();
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  /** The port it listens on (the one asked for, or the one given for port 0). */
  readonly port: number;
  close(): Promise<void>;
}

/**
 * prom-client 15 writes a not-a-number sample as `Nan`; the text format spells it `NaN`
 * (https://prometheus.io/docs/instrumenting/exposition_formats/#text-format-details), and strict
 * parsers refuse the other spelling. Our gauges say NaN when the database does not answer (the
 * outbox gauges), and Node's event-loop lag mean is NaN between two scrapes without a sample.
 */
const exposition = (text: string) => text.replace(/ Nan$/gm, ' NaN');

export async function startMetricsServer(registry: Registry, { port, host }: { port: number; host: string }): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: metrics are at GET /metrics\n');
      return;
    }
    registry.metrics().then((text) => {
      res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : exposition(text));
    }, (error: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`metrics collection failed: ${(error as Error).message}\n`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
