/**
 * Reading one variable of the environment: each reader names the variable in the
 * {@link ConfigError} it throws for a bad value. Only config.ts and its topic readers
 * (src/config/*.ts) read the environment.
 *
 * @example const port = integer(env, 'PORT', 3000, 0, 65535);
 * @example const ttl = duration(env, 'ACCESS_TOKEN_TTL', 's', 3600, 1, 86_400); // "1h", "90m" or "3600"
 */

export class ConfigError extends Error {
  constructor(readonly variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/** The environment, as process.env is. */
export type Env = Record<string, string | undefined>;

/** A variable's value, trimmed; empty is unset. */
export function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === '' ? undefined : value;
}

/** A whole number within `min`–`max`, or `fallback` when unset. */
export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

/** What a duration is written in, each in milliseconds. */
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The unit a duration variable is kept in, and a bare number is read in (its name says which: _MS, _SECONDS, _DAYS; a _TTL is in seconds). */
export type DurationUnit = 'ms' | 's' | 'd';

const UNIT_NAMES: Record<DurationUnit, string> = { ms: 'milliseconds', s: 'seconds', d: 'days' };

/** `amount` of `unit` in the largest unit it is a whole number of: (3600, 's') → `1h`, (1500, 'ms') → `1500ms`. */
export function formatDuration(amount: number, unit: DurationUnit): string {
  const ms = amount * UNIT_MS[unit];
  if (ms === 0) return '0';
  for (const name of ['d', 'h', 'm', 's', 'ms'] as const) {
    if (ms % UNIT_MS[name] === 0) return `${ms / UNIT_MS[name]}${name}`;
  }
  return `${ms}ms`;
}

/**
 * A duration within `min`–`max`, or `fallback` when unset; all three, and the result, in `unit`.
 * Every duration variable is written the same way: a whole number with a unit (`500ms`, `30s`,
 * `5m`, `1h`, `7d`), or a bare whole number in the variable's own unit, as it was first documented
 * (`ACCESS_TOKEN_TTL=3600` is still an hour). A value that is not a whole number of `unit` is refused.
 */
export function duration(env: Env, name: string, unit: DurationUnit, fallback: number, min: number, max: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const match = /^(\d{1,12})(ms|s|m|h|d)?$/.exec(raw);
  const ms = match ? Number(match[1]) * UNIT_MS[(match[2] ?? unit) as keyof typeof UNIT_MS] : Number.NaN;
  const amount = ms / UNIT_MS[unit];
  if (!Number.isInteger(amount) || amount < min || amount > max) {
    throw new ConfigError(name, `must be a duration from ${formatDuration(min, unit)} to ${formatDuration(max, unit)} `
      + `(such as 500ms, 30s, 5m, 1h, 7d; a bare number is ${UNIT_NAMES[unit]}${unit === 'ms' ? '' : `, and ms must make whole ${UNIT_NAMES[unit]}`}), got "${raw}"`);
  }
  return amount;
}

/** true/1 or false/0 (any case); unset is false. */
export function boolean(env: Env, name: string): boolean {
  const raw = read(env, name)?.toLowerCase();
  if (raw === undefined || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** An absolute URL with one of `protocols`, or undefined when unset. */
export function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be an absolute URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return raw;
}
