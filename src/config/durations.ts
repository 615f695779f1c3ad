/**
 * The grace period of a secret rotation: how long the secret just replaced keeps working beside
 * the new one (a client secret at every endpoint that authenticates clients; a webhook signing
 * secret as a second signature). Written as a duration: `0` (the old secret ends at once, the
 * leaked-secret case), or a whole number of milliseconds, seconds, minutes, hours or days: `500ms`,
 * `30s`, `15m`, `1h`, `7d` (the notation of every duration variable, config/env.ts `duration`).
 * Whether a replaced secret still works, and until when, is the domain's rule (clients/secret-grace.ts).
 *
 * @example parseGrace('1h') // 3_600_000
 */

/** CLIENT_SECRET_ROTATION_GRACE when unset. */
export const DEFAULT_GRACE_MS = 24 * 3600 * 1000;

/** The longest overlap: two secrets that both work are a cost, kept as short as a rollout allows. */
export const MAX_GRACE_MS = 30 * 24 * 3600 * 1000;

const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** What a grace may be written as, for error messages. */
export const GRACE_SYNTAX = 'a duration such as 0, 30s, 15m, 1h or 7d (at most 30d)';

/** The grace in milliseconds, or undefined when `text` is not a duration of at most {@link MAX_GRACE_MS}. */
export function parseGrace(text: string): number | undefined {
  const match = /^(\d{1,10})(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  // A bare number is only `0`: "15" could mean seconds or minutes.
  if (match[2] === undefined && amount !== 0) return undefined;
  const ms = amount * (match[2] ? UNITS[match[2] as keyof typeof UNITS] : 0);
  return ms <= MAX_GRACE_MS ? ms : undefined;
}

/** The grace `text` names; otherwise throws `refuse(problem)`, the problem saying what a grace may be ("must be …, got …"). */
export function requireGrace(text: string, refuse: (problem: string) => Error): number {
  const ms = parseGrace(text);
  if (ms === undefined) throw refuse(`must be ${GRACE_SYNTAX}, got "${text}"`);
  return ms;
}

/** `ms` as the largest whole unit it is a multiple of: 86_400_000 → `1d`, 5_400_000 → `90m`, 0 → `0`. */
export function formatGrace(ms: number): string {
  if (ms === 0) return '0';
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % UNITS[unit] === 0) return `${ms / UNITS[unit]}${unit}`;
  }
  return `${Math.ceil(ms / 1000)}s`;
}
