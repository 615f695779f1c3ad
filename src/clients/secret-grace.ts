/**
 * A rotated secret's grace (docs/rotating-credentials.md): the secret just replaced keeps working
 * beside the new one until its grace ends; a client secret at every endpoint that authenticates
 * clients, a webhook signing secret as a second signature. How a grace is written and its bounds
 * are the configuration's (config/durations.ts).
 *
 * @example if (inGrace(client.previousSecretHash, client.previousSecretExpiresAt, now)) …
 */

/** Whether a replaced secret still works at `at`: one was kept, and its grace ends after `at`. */
export function inGrace(previous: string | null | undefined, until: Date | null | undefined, at: Date): boolean {
  return Boolean(previous) && until !== null && until !== undefined && at.getTime() < until.getTime();
}

/**
 * When the replaced secret stops working if rotated at `now` with `graceMs`: `now` for a grace of
 * 0 (it is not kept at all); otherwise rounded up to a whole second, so the instant is the same
 * wherever it is compared (the provider sees it in seconds, as RFC 7591 gives `client_secret_expires_at`).
 */
export function graceEnd(now: Date, graceMs: number): Date {
  return graceMs === 0 ? now : new Date(Math.ceil((now.getTime() + graceMs) / 1000) * 1000);
}
