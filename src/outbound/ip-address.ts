/**
 * An IP address, read strictly and as written. `net.isIP` decides what is an address (ipaddr.js
 * alone also reads `127.1` and `0x7f.1`); ipaddr.js reads it, except that a dotted IPv4 right
 * after `::` (`::192.0.2.1`, IPv4-compatible, RFC 4291 §2.5.5.1) stays that address rather than
 * the IPv4-mapped `::ffff:192.0.2.1` ipaddr.js would make of it. Brackets and a zone are dropped.
 *
 * @example parseAddress('[fe80::1%eth0]')?.kind() // 'ipv6'
 */
import net from 'node:net';
import ipaddr from 'ipaddr.js';

export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (net.isIP(bare) === 0) return undefined;
  try {
    return ipaddr.parse(bare.replace(/^::(?=\d+\.\d+\.\d+\.\d+$)/, '::0:'));
  } catch {
    return undefined; // the two parsers disagree: not an address, so refused rather than a throw
  }
}
