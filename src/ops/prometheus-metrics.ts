/**
 * Prometheus metrics, in a registry of this app's own (not
 * prom-client's global one), so that several apps can run in one process (tests). Served by
 * src/ops/metrics-server.ts on METRICS_PORT only, and loaded only then (ops/metrics.ts).
 *
 * | metric                                              | type      | labels                      |
 * |-----------------------------------------------------|-----------|-----------------------------|
 * | oauth_http_request_duration_seconds                 | histogram | method, route, status       |
 * | oauth_tokens_issued_total                           | counter   | grant_type                  |
 * | oauth_logins_total                                  | counter   | outcome                     |
 * | oauth_rate_limit_refusals_total                     | counter   | budget                      |
 * | oauth_webhook_deliveries_total                      | counter   | outcome                     |
 * | oauth_client_previous_secret_uses_total             | counter   | client_id                   |
 * | oauth_webhook_outbox_pending                        | gauge     | — (read on scrape)          |
 * | oauth_webhook_outbox_oldest_pending_age_seconds     | gauge     | — (read on scrape)          |
 * | oauth_postgres_pool_connections                     | gauge     | state: total, idle, waiting |
 * | oauth_redis_connected                               | gauge     | —                           |
 * | process_*, nodejs_* (prom-client defaults)          |           |                             |
 *
 * @example const metrics = prometheusMetrics({ pendingDeliveries, poolState }); koa.use(accessLog({ …, onResponse: metrics.observeRequest }));
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Metrics, MetricsSources } from './metrics.js';

const GRANT_TYPES = new Set(['authorization_code', 'refresh_token', 'client_credentials']);

export function prometheusMetrics({ pendingDeliveries, poolState, redisConnected }: MetricsSources): Metrics & { readonly registry: Registry } {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });

  const duration = new Histogram({
    name: 'oauth_http_request_duration_seconds',
    help: 'Time from receiving a request to its response, by matched route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const tokens = new Counter({ name: 'oauth_tokens_issued_total', help: 'Token responses issued, by grant type.', labelNames: ['grant_type'] as const, registers });
  const logins = new Counter({ name: 'oauth_logins_total', help: 'Password login attempts, by outcome (success, failure, blocked).', labelNames: ['outcome'] as const, registers });
  const refusals = new Counter({ name: 'oauth_rate_limit_refusals_total', help: 'Requests or attempts over a rate-limit budget, by budget.', labelNames: ['budget'] as const, registers });
  const writeRetries = new Counter({
    name: 'oauth_store_write_retries_total', help: 'Write statements carrying several requests\' writes that failed and were sent again one request at a time, by SQLSTATE (40P01: deadlock).', labelNames: ['code'] as const, registers,
  });
  const deliveries = new Counter({ name: 'oauth_webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome (delivered, pending = will retry, failed, gone).', labelNames: ['outcome'] as const, registers });
  // By client: which clients still use a rotated secret (only those that do get a series).
  const previousSecret = new Counter({
    name: 'oauth_client_previous_secret_uses_total', help: 'Client authentications with the previous secret, in the grace after a rotation, by client_id.', labelNames: ['client_id'] as const, registers,
  });

  // Read on scrape: one indexed aggregate over the pending deliveries (index status, next_attempt_at).
  const outbox = { pending: 0, oldestAgeSeconds: 0, read: undefined as Promise<void> | undefined };
  const readOutbox = () => {
    outbox.read ??= pendingDeliveries()
      .then(({ pending, oldest }) => {
        outbox.pending = pending;
        outbox.oldestAgeSeconds = oldest ? Math.max((Date.now() - oldest.getTime()) / 1000, 0) : 0;
      }, () => { outbox.pending = Number.NaN; outbox.oldestAgeSeconds = Number.NaN; }) // a store that is down: no number
      .finally(() => { outbox.read = undefined; });
    return outbox.read;
  };
  new Gauge({
    name: 'oauth_webhook_outbox_pending', help: 'Webhook deliveries waiting to be sent or retried (NaN when the database did not answer).', registers,
    async collect() { await readOutbox(); this.set(outbox.pending); },
  });
  new Gauge({
    name: 'oauth_webhook_outbox_oldest_pending_age_seconds', help: 'Age of the oldest pending webhook delivery; 0 when none is pending.', registers,
    async collect() { await readOutbox(); this.set(outbox.oldestAgeSeconds); },
  });
  if (poolState) {
    new Gauge({
      name: 'oauth_postgres_pool_connections', help: 'PostgreSQL pool connections: total open, idle, and requests waiting for one.', labelNames: ['state'] as const, registers,
      collect() {
        const state = poolState();
        this.set({ state: 'total' }, state.total);
        this.set({ state: 'idle' }, state.idle);
        this.set({ state: 'waiting' }, state.waiting);
      },
    });
  }
  if (redisConnected) {
    new Gauge({
      name: 'oauth_redis_connected', help: '1 when the Redis connection is ready, else 0.', registers,
      collect() { this.set(redisConnected() ? 1 : 0); },
    });
  }

  return {
    registry,
    observeRequest: ({ method, route, status, durationMs }) => {
      duration.observe({ method, route, status: String(status) }, durationMs / 1000);
    },
    tokenIssued: (grantType) => { tokens.inc({ grant_type: GRANT_TYPES.has(grantType) ? grantType : 'other' }); },
    webhookOutcome: (outcome) => { deliveries.inc({ outcome }); },
    previousSecretUsed: (clientId) => { previousSecret.inc({ client_id: clientId }); },
    refused: (budget) => { refusals.inc({ budget }); },
    loginAttempted: (outcome) => { logins.inc({ outcome }); },
    writeRetried: (code) => { writeRetries.inc({ code }); },
  };
}
