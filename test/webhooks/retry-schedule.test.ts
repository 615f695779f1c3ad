/** The retry schedule: about the base first, doubling, capped, jittered ±20 %, 15 attempts (≈ a day at 30 s). */
import { describe, expect, test } from '@jest/globals';
import { MAX_ATTEMPTS, retryDelayMs } from '../../src/outbox/retry-schedule.js';
import { outcomeOf } from '../../src/webhooks/delivery.js';

describe('retryDelayMs', () => {
  test('doubles from the base, capped at 512× the base', () => {
    const middle = () => 0.5; // no jitter
    expect(Array.from({ length: 14 }, (_, i) => retryDelayMs(i + 1, 30_000, middle)! / 30_000))
      .toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 512, 512, 512, 512]);
  });

  test('15 attempts in all: at the default base the last retry comes about a day after the first attempt', () => {
    expect(MAX_ATTEMPTS).toBe(15);
    expect(retryDelayMs(15, 30_000)).toBeUndefined();
    let total = 0;
    for (let attempts = 1; attempts < MAX_ATTEMPTS; attempts += 1) total += retryDelayMs(attempts, 30_000, () => 0.5)!;
    expect(total / 3_600_000).toBeCloseTo(25.6, 1);
  });

  test('jitter stays within ±20 %', () => {
    expect(retryDelayMs(1, 30_000, () => 0)).toBe(24_000);
    expect(retryDelayMs(1, 30_000, () => 0.999_999)).toBe(36_000);
    expect(retryDelayMs(3, 1, () => 0)).toBe(3);
  });
});

describe('outcomeOf (what a response means)', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  test.each([
    [{ statusCode: 200 }, 'delivered'], [{ statusCode: 204 }, 'delivered'], [{ statusCode: 299 }, 'delivered'],
    [{ statusCode: 301 }, 'pending'], [{ statusCode: 302 }, 'pending'], [{ statusCode: 400 }, 'pending'],
    [{ statusCode: 404 }, 'pending'], [{ statusCode: 500 }, 'pending'], [{ error: 'ECONNREFUSED' }, 'pending'],
    [{ statusCode: 410 }, 'gone'],
  ])('%j → %s', (result, status) => {
    expect(outcomeOf(result, 1, 1000, now).status).toBe(status);
  });

  test('the last attempt fails for good', () => {
    expect(outcomeOf({ statusCode: 503 }, MAX_ATTEMPTS, 1000, now)).toEqual({ status: 'failed', statusCode: 503, error: 'the endpoint answered 503' });
  });
});
