/**
 * A signing key's states, read from its stored times and the clock alone, so that every
 * instance (and `keys:list`) reads the same state at the same moment:
 *
 * | state      | from          | published | signs |
 * |------------|---------------|-----------|-------|
 * | `next`     | created       | yes       | no    |
 * | `current`  | `currentAt`   | yes       | yes   |
 * | `retiring` | `retiringAt`  | yes       | no    |
 * | `retired`  | `retiredAt`   | no        | no    |
 *
 * A rotation sets the replaced key's `retiringAt` to its successor's `currentAt`: one instant,
 * stored once, at which every instance switches.
 *
 * @see docs/signing-keys.md
 */
import type { Config } from '../config.js';

export type KeyState = 'next' | 'current' | 'retiring' | 'retired';

export interface ScheduledKey {
  readonly kid: string;
  readonly currentAt: Date;
  readonly retiringAt: Date | null;
  readonly retiredAt: Date | null;
}

export function stateAt(key: ScheduledKey, time: number): KeyState {
  if (key.currentAt.getTime() > time) return 'next';
  if (key.retiringAt === null || key.retiringAt.getTime() > time) return 'current';
  if (key.retiredAt === null || key.retiredAt.getTime() > time) return 'retiring';
  return 'retired';
}

const newestFirst = (a: ScheduledKey, b: ScheduledKey) => b.currentAt.getTime() - a.currentAt.getTime();

/**
 * The keys published at `time`, the one that signs first: oidc-provider signs with the first
 * key of an algorithm in its `jwks` and publishes them all (its docs' `jwks` → key rotation).
 * Empty when no key is current then (a table edited by hand): the caller keeps what it has.
 */
export function publishedAt<K extends ScheduledKey>(keys: readonly K[], time: number): K[] {
  const published = keys.filter((key) => stateAt(key, time) !== 'retired').sort(newestFirst);
  const signing = published.find((key) => stateAt(key, time) === 'current');
  return signing ? [signing, ...published.filter((key) => key !== signing)] : [];
}

/** The moments after `time` at which {@link publishedAt} changes, earliest first. */
export function changesAfter(keys: readonly ScheduledKey[], time: number): number[] {
  const moments = keys.flatMap((key) => [key.currentAt, key.retiringAt, key.retiredAt]).flatMap((date) => (date ? [date.getTime()] : []));
  return [...new Set(moments.filter((moment) => moment > time))].sort((a, b) => a - b);
}

/**
 * How long a replaced key stays published once it stopped signing: the longest lifetime of what
 * it signs (ID tokens, `ttl.IdToken`; access tokens, `ttl.AccessToken`; a declared resource's JWT
 * access tokens, its own lifetime: RESOURCES and `longestResourceTtl`, the longest of those
 * stored by resources:add), so that every token it signed verifies until it expires, plus
 * KEYS_RETIRE_LEEWAY for verifiers' clock leeway (RFC 7519 §4.1.4) and requests that were
 * signing at the switch.
 */
export function retireAfterMs(config: Pick<Config, 'idTokenTtl' | 'accessTokenTtl' | 'signingKeys' | 'standardClients'>, longestResourceTtl = 0): number {
  const declared = config.standardClients.resources.map((resource) => resource.accessTokenTtl);
  return (Math.max(config.idTokenTtl, config.accessTokenTtl, longestResourceTtl, ...declared) + config.signingKeys.retireLeeway) * 1000;
}

/**
 * The shortest publish-ahead: two polls (KEYS_POLL_INTERVAL_MS), so that every instance has
 * read the new key, and publishes it, before any instance signs with it.
 */
export function minimumPublishAheadMs(config: Pick<Config, 'signingKeys'>): number {
  return 2 * config.signingKeys.pollIntervalMs;
}
