/**
 * Where a request comes from, in two forms, asked once per request and kept on it:
 * - {@link clientAddress}, the address itself, as the access log and the audit trail record it;
 * - {@link clientKey}, the key the rate limits and the login guard count it by.
 *
 * The address is `ctx.ip`: the socket's peer, or behind TRUST_PROXY the client its trusted proxies
 * report (http/access-log.ts `publicOrigin` sets it). Entries a client writes itself come before
 * theirs and are never read, so rotating them changes neither. A forwarded entry that is not an
 * address (a proxy misconfiguration) falls back to the socket's peer: requests then share the
 * proxy's budget, which limits too much rather than too little.
 *
 * Both are written one way whatever the socket or the proxy wrote: no brackets, port or zone, and an
 * IPv4 client of a dual-stack listener (`::ffff:192.0.2.1`) as its IPv4 address. The key keeps IPv4
 * as is and takes IPv6 by its /64: one subscriber's line or host usually owns a whole /64
 * (RFC 6177, RFC 4291 §2.5.1), so keying by the full address would hand one machine 2^64 budgets.
 *
 * @example clientAddress(ctx) // '2001:db8:1:2::7'; clientKey(ctx) // '2001:db8:1:2::/64'
 */
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Context } from 'koa';
import { parseAddress } from '../outbound/ip-address.js';

/** An IPv4 client as a dual-stack listener sees it: `::ffff:192.0.2.1`. */
const MAPPED_IPV4 = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;
const MAPPED = ipaddr.parseCIDR('::ffff:0:0/96');

/** One address string as an IPv4 address or a parsed IPv6 one (brackets, port and zone dropped); undefined if it is not an IP. */
function read(raw: string): string | ipaddr.IPv6 | undefined {
  const address = raw.trim().replace(/^\[(.*)\](:\d+)?$/, '$1').replace(/%.*$/, '');
  if (net.isIPv4(address)) return address;
  const mapped = MAPPED_IPV4.exec(address)?.[1];
  if (mapped && net.isIPv4(mapped)) return mapped; // the common case, without the general parse below
  const withoutPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(address)?.[1];
  if (withoutPort && net.isIPv4(withoutPort)) return withoutPort;
  const ip = parseAddress(address);
  if (!(ip instanceof ipaddr.IPv6)) return undefined;
  return ip.match(MAPPED) ? ip.toIPv4Address().toString() : ip;
}

/** One address string written one way (IPv6 in its short form, RFC 5952); undefined if it is not an IP. */
export function normalAddress(raw: string): string | undefined {
  const ip = read(raw);
  return typeof ip === 'string' ? ip : ip?.toString();
}

/** The rate-limit key of one address string: IPv4 as is, IPv6 by its /64; undefined if it is not an IP. */
export function addressKey(raw: string): string | undefined {
  const ip = read(raw);
  return typeof ip === 'string' || ip === undefined ? ip : `${ip.parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`;
}

/** The address the request comes from (see the module comment). */
export function clientAddress(ctx: Context): string {
  const { state } = ctx;
  if (state.clientAddress !== undefined) return state.clientAddress;
  const peer = ctx.req.socket.remoteAddress ?? '';
  return (state.clientAddress = normalAddress(ctx.ip) ?? normalAddress(peer) ?? (peer || 'unknown'));
}

/** The key the rate limits and the login guard count the request's address by. */
export function clientKey(ctx: Context): string {
  const { state } = ctx;
  if (state.clientKey !== undefined) return state.clientKey;
  const address = clientAddress(ctx);
  return (state.clientKey = addressKey(address) ?? address);
}
