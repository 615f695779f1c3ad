/**
 * When an outbox message whose attempt failed is tried again (a webhook event, a back-channel
 * logout, a mail): after about its base (`WEBHOOK_RETRY_BASE_MS`, `MAIL_RETRY_BASE_MS`), then
 * doubling (capped at 512× the base), each delay ±20 % at random so that retries to one receiver
 * do not arrive in lock-step. 15 attempts in all; at the default base (30 s) the last retry is
 * about 25.6 hours after the first attempt, and then the message is marked failed.
 *
 * @see https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/
 */

/** Attempts a message gets in all (the first and 14 retries). */
export const MAX_ATTEMPTS = 15;

/** The largest delay, as a multiple of the base (2^9). */
const CAP_FACTOR = 512;

/**
 * The delay before the next attempt after `attempts` failed ones, or undefined when the
 * message has had all its attempts.
 *
 * @example retryDelayMs(1, 30_000) // ≈ 30 000 (24 000 – 36 000)
 */
export function retryDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number | undefined {
  if (attempts >= MAX_ATTEMPTS) return undefined;
  const factor = Math.min(2 ** (attempts - 1), CAP_FACTOR);
  return Math.max(1, Math.round(baseMs * factor * (0.8 + 0.4 * random())));
}
