/**
 * What the app counts for Prometheus: request durations, tokens issued, login outcomes,
 * rate-limit refusals, webhook outcomes. Counted only when METRICS_PORT is set: then app.ts loads
 * prom-client (ops/prometheus-metrics.ts) and its registry is served on that port. Without it
 * nothing is counted ({@link NO_METRICS}), and prom-client is not even loaded.
 *
 * @example const metrics = config.metricsPort === undefined ? NO_METRICS : (await import('./ops/prometheus-metrics.js')).prometheusMetrics({ db, redis });
 */
import type { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import type { LoginGuard } from '../accounts/login-guard.js';
import type { RequestOutcome } from '../http/access-log.js';
import type { Database } from '../store/database.js';
import type { LimiterFactory } from '../store/limiter.js';

export interface MetricsSources {
  db: Database;
  redis: Redis | undefined;
}

export interface Metrics {
  /** The registry to serve; undefined when nothing is counted. */
  readonly registry: Registry | undefined;
  observeRequest(outcome: RequestOutcome): void;
  tokenIssued(grantType: string): void;
  webhookOutcome(outcome: string): void;
  /** A client authenticated with its previous secret, in the grace after a rotation. */
  previousSecretUsed(clientId: string): void;
  /** The limiter factory with each refusal counted under the limiter's name (its budget). */
  countRefusals(factory: LimiterFactory): LimiterFactory;
  /** The login guard with each attempt's outcome counted: success, failure, blocked. */
  countLogins(guard: LoginGuard): LoginGuard;
}

/** Counts nothing. */
export const NO_METRICS: Metrics = {
  registry: undefined,
  observeRequest() {},
  tokenIssued() {},
  webhookOutcome() {},
  previousSecretUsed() {},
  countRefusals: (factory) => factory,
  countLogins: (guard) => guard,
};
