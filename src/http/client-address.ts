/**
 * The address a request comes from, as the rate limits and the login guard key it.
 *
 * - `ctx.ip`: the socket's peer, or with TRUST_PROXY the last `X-Forwarded-For` entry, the one
 *   our own proxy appended (app.ts sets Koa's `maxIpsCount: 1`). Entries a client writes
 *   itself come before it and are never read, so rotating them cannot change the key.
 * - IPv4, and IPv4-mapped IPv6 (`::ffff:192.0.2.1`), as the IPv4 address.
 * - IPv6 by its /64: one subscriber's line or host usually owns a whole /64 (RFC 6177,
 *   RFC 4291 §2.5.1), so keying by the full address would hand one machine 2^64 budgets.
 *
 * @example clientAddress(ctx) // '203.0.113.7' or '2001:db8:1:2::/64'
 */
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Context } from 'koa';
import { parseAddress } from './ip-address.js';

/** An IPv4 client as a dual-stack listener sees it: `::ffff:192.0.2.1`. */
const MAPPED_IPV4 = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;
const MAPPED = ipaddr.parseCIDR('::ffff:0:0/96');

/** The rate-limit key of one address string (see the module comment); undefined if it is not an IP. */
export function addressKey(raw: string): string | undefined {
  const address = raw.trim().replace(/^\[(.*)\](:\d+)?$/, '$1').replace(/%.*$/, '');
  if (net.isIPv4(address)) return address;
  const mapped = MAPPED_IPV4.exec(address)?.[1];
  if (mapped && net.isIPv4(mapped)) return mapped; // the common case, without the general parse below
  const withoutPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(address)?.[1];
  if (withoutPort && net.isIPv4(withoutPort)) return withoutPort;
  const ip = parseAddress(address);
  if (!(ip instanceof ipaddr.IPv6)) return undefined;
  if (ip.match(MAPPED)) return ip.toIPv4Address().toString();
  return `${ip.parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`;
}

/**
 * The key for the request's address. A forwarded entry that is not an address (a proxy
 * misconfiguration) falls back to the socket's peer: requests then share the proxy's budget,
 * which limits too much rather than too little.
 */
export function clientAddress(ctx: Context): string {
  const state = ctx.state as { [ADDRESS]?: string };
  if (state[ADDRESS] !== undefined) return state[ADDRESS]; // the access log and the rate limits both ask
  const peer = ctx.req.socket.remoteAddress ?? '';
  return (state[ADDRESS] = addressKey(ctx.ip) ?? addressKey(peer) ?? (peer || 'unknown'));
}

const ADDRESS = Symbol('client address');
