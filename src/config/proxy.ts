/**
 * TRUST_PROXY: whose `X-Forwarded-For` and `X-Forwarded-Proto` the service believes, and so which
 * address is the client's (rate limits, the login guard, logs). `X-Forwarded-Host` is never
 * believed: every URL the service publishes comes from BASE_URL (http/access-log.ts `publicOrigin`).
 *
 * | TRUST_PROXY                      | believed from                               | the client is                                          |
 * |----------------------------------|---------------------------------------------|--------------------------------------------------------|
 * | unset, `false`, `0`              | no one                                      | the socket's peer                                      |
 * | `true` (`1`), or a number N      | any peer: N proxies in front, always        | the N-th `X-Forwarded-For` entry from the right        |
 * | addresses, CIDRs, `loopback`, `linklocal`, `uniquelocal` (comma-separated) | a peer in the list | the rightmost entry not in the list (walking left from the peer) |
 *
 * @example proxyTrust({ TRUST_PROXY: '10.0.0.0/8, 2001:db8::/32' }) // { kind: 'addresses', addresses: ['10.0.0.0/8', '2001:db8::/32'] }
 * @see https://expressjs.com/en/guide/behind-proxies.html (the same three forms, and proxy-addr, which reads them)
 */
import proxyAddr from 'proxy-addr';
import { ConfigError, read } from './env.js';
import type { Env } from './env.js';

export type ProxyTrust =
  | { readonly kind: 'none' }
  /** Exactly `hops` proxies (a CDN and a load balancer: 2) stand in front of every request. */
  | { readonly kind: 'hops'; readonly hops: number }
  /** The proxies' own addresses (IPs or CIDRs, or proxy-addr's named ranges). */
  | { readonly kind: 'addresses'; readonly addresses: readonly string[] };

export const NO_PROXY: ProxyTrust = Object.freeze({ kind: 'none' });

const MAX_HOPS = 10;

export function proxyTrust(env: Env): ProxyTrust {
  const raw = read(env, 'TRUST_PROXY');
  if (raw === undefined || /^(false|0)$/i.test(raw)) return NO_PROXY;
  if (/^(true|1)$/i.test(raw)) return Object.freeze({ kind: 'hops', hops: 1 });
  if (/^\d+$/.test(raw)) {
    if (Number(raw) > MAX_HOPS) throw new ConfigError('TRUST_PROXY', `must be at most ${MAX_HOPS} proxy hops, got ${raw}`);
    return Object.freeze({ kind: 'hops', hops: Number(raw) });
  }
  const addresses = raw.split(',').map((entry) => entry.trim()).filter(Boolean);
  try {
    proxyAddr.compile(addresses);
  } catch (error) {
    throw new ConfigError('TRUST_PROXY', `must be true, false, a number of proxy hops (1-${MAX_HOPS}), or the proxies' addresses (IPs or CIDRs, comma-separated; or loopback, linklocal, uniquelocal): ${(error as Error).message}`);
  }
  return Object.freeze({ kind: 'addresses', addresses: Object.freeze(addresses) });
}
