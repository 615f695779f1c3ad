/**
 * The eight 16-bit groups of an IPv6 address: `::` expanded, a dotted IPv4 tail
 * (`::ffff:192.0.2.1`) turned into its two groups, a zone (`%eth0`) dropped. For addresses
 * `net.isIPv6` accepts.
 *
 * @example ipv6Groups('2001:db8::1') // [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]
 * @see RFC 4291 §2.2 (text representation)
 */
export function ipv6Groups(address: string): number[] {
  let text = address.split('%')[0]!;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16));
}
