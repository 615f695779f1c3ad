/**
 * What the app counts for Prometheus: request durations, tokens issued, login outcomes,
 * rate-limit refusals, webhook outcomes, retried write statements. Counted only when METRICS_PORT
 * is set: then app.ts loads prom-client (ops/prometheus-metrics.ts) and its registry is served on
 * that port. Without it nothing is counted ({@link NO_METRICS}), and prom-client is not even loaded.
 *
 * @example const metrics = config.metricsPort === undefined ? NO_METRICS : (await import('./ops/prometheus-metrics.js')).prometheusMetrics({ db, redis });
 */
import type { Registry } from 'prom-client';

/** One answered request, as the access log saw it (http/access-log.ts). */
export interface RequestOutcome {
  method: string;
  route: string;
  status: number;
  durationMs: number;
  clientId: string | undefined;
}

/** What is read on each scrape; the metrics know nothing of the stores behind it (app.ts wires them). */
export interface MetricsSources {
  /** The webhook deliveries waiting to be sent or retried: how many, and when the oldest was raised. Rejects when the database does not answer. */
  pendingDeliveries(): Promise<{ pending: number; oldest: Date | null }>;
  /** The PostgreSQL pool's connections, when there is a pool (not embedded). */
  poolState?: () => { total: number; idle: number; waiting: number };
  /** Whether Redis is connected, when there is Redis. */
  redisConnected?: () => boolean;
}

export interface Metrics {
  /** The registry to serve; undefined when nothing is counted. */
  readonly registry: Registry | undefined;
  observeRequest(outcome: RequestOutcome): void;
  tokenIssued(grantType: string): void;
  webhookOutcome(outcome: string): void;
  /** A client authenticated with its previous secret, in the grace after a rotation. */
  previousSecretUsed(clientId: string): void;
  /** A request or attempt over a rate-limit budget (store/limiter.ts `countingRefusals`). */
  refused(budget: string): void;
  /** A password sign-in's outcome: success, failure, blocked (accounts/login-guard.ts `countingOutcomes`). */
  loginAttempted(outcome: string): void;
  /** A write statement shared by several requests failed and went again request by request, by SQLSTATE (store/write-sender.ts). */
  writeRetried(code: string): void;
}

/** Counts nothing. */
export const NO_METRICS: Metrics = {
  registry: undefined,
  observeRequest() {},
  tokenIssued() {},
  webhookOutcome() {},
  previousSecretUsed() {},
  refused() {},
  loginAttempted() {},
  writeRetried() {},
};
