/**
 * ops/prometheus-metrics.ts alone: the counters the store's hooks move, read from its registry
 * (the flows that move the others are in metrics.test.ts).
 */
import { describe, expect, test } from '@jest/globals';
import { prometheusMetrics } from '../../src/ops/prometheus-metrics.js';

describe('oauth_store_write_retries_total', () => {
  test('counts each write statement sent again request by request, by SQLSTATE', async () => {
    const metrics = prometheusMetrics({ pendingDeliveries: async () => ({ pending: 0, oldest: null }) });
    metrics.writeRetried('40P01');
    metrics.writeRetried('40P01');
    metrics.writeRetried('22P02');
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^oauth_store_write_retries_total\{code="40P01"\} 2$/m);
    expect(text).toMatch(/^oauth_store_write_retries_total\{code="22P02"\} 1$/m);
  });
});
