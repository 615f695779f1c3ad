/**
 * Where webhooks may be sent. A webhook URL is chosen by a client but fetched from inside our
 * network, so addresses that reach our own infrastructure are refused: loopback, private,
 * shared (100.64/10) and other non-public ranges unless `WEBHOOK_ALLOW_PRIVATE_NETWORKS=true`;
 * link-local and cloud-metadata addresses always. Each IPv6 spelling that embeds an IPv4
 * address (mapped, compatible, NAT64, 6to4) is judged by that IPv4 address. URLs are checked
 * when registered (their DNS answers included) and again at connect time through the
 * socket's `lookup`, so a name that later resolves elsewhere (DNS rebinding) is refused too.
 *
 * @see https://cheatsheetseries.owasp.org/cheatsheets/Server_Side_Request_Forgery_Prevention_Cheat_Sheet.html
 */
import dns from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import net from 'node:net';
import { ipv6Groups } from '../http/ipv6.js';

export interface NetworkPolicy {
  /** Only https URLs (production). */
  readonly httpsOnly: boolean;
  /** Loopback, private and shared ranges are allowed (development, tests). */
  readonly allowPrivate: boolean;
}

export type AddressClass = 'public' | 'private' | 'forbidden';

function rules(entries: [string, number, 'ipv4' | 'ipv6'][]): net.BlockList {
  const list = new net.BlockList();
  for (const [address, prefix, family] of entries) list.addSubnet(address, prefix, family);
  return list;
}

/** Never a webhook destination: link-local, cloud metadata, "this network", multicast, reserved. */
const FORBIDDEN = rules([
  ['0.0.0.0', 8, 'ipv4'], // "this network"; 0.0.0.0 reaches the local host on Linux
  ['169.254.0.0', 16, 'ipv4'], // link-local, incl. 169.254.169.254 (AWS, GCP, Azure metadata)
  ['100.100.100.200', 32, 'ipv4'], // Alibaba Cloud metadata
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, broadcast
  ['::', 128, 'ipv6'], // unspecified
  ['fe80::', 10, 'ipv6'], // link-local
  ['fd00:ec2::254', 128, 'ipv6'], // AWS metadata over IPv6
  ['ff00::', 8, 'ipv6'], // multicast
]);

/** Our own or our neighbours' networks: refused unless private networks are allowed. */
const PRIVATE = rules([
  ['127.0.0.0', 8, 'ipv4'], // loopback
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // shared address space (carrier-grade NAT)
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['::1', 128, 'ipv6'], // loopback
  ['fc00::', 7, 'ipv6'], // unique local
  ['fec0::', 10, 'ipv6'], // site-local (deprecated)
]);

/** The 16 bytes of an IPv6 address (`net.isIPv6` already said it is one). */
function ipv6Bytes(address: string): number[] {
  return ipv6Groups(address).flatMap((group) => [group >> 8, group & 0xff]);
}

/** The IPv4 address an IPv6 address stands for, if it embeds one. */
function embeddedIpv4(address: string): string | undefined {
  const b = ipv6Bytes(address);
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (at: number) => b.slice(at, at + 4).join('.');
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4(12); // ::ffff:a.b.c.d (mapped)
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return v4(12); // ::ffff:0:a.b.c.d (SIIT)
  if (zero(0, 12) && !zero(12, 15)) return v4(12); // ::a.b.c.d (compatible; not :: or ::1)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return v4(12); // 64:ff9b::/96 (NAT64)
  if (b[0] === 0x20 && b[1] === 0x02) return v4(2); // 2002:AABB:CCDD::/16 (6to4)
  return undefined;
}

/** How an IP address (either family) is treated. */
export function classifyAddress(address: string): AddressClass {
  const plain = address.replace(/^\[|\]$/g, '');
  const family = net.isIP(plain.split('%')[0]!);
  if (family === 0) return 'forbidden';
  if (family === 6) {
    const inner = embeddedIpv4(plain);
    if (inner) return classifyAddress(inner);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const bare = plain.split('%')[0]!;
  if (FORBIDDEN.check(bare, type)) return 'forbidden';
  if (PRIVATE.check(bare, type)) return 'private';
  return 'public';
}

/** Why `address` may not be contacted under `policy`, or undefined when it may. */
export function addressProblem(address: string, policy: NetworkPolicy): string | undefined {
  const kind = classifyAddress(address);
  if (kind === 'forbidden') return `${address} is a link-local, metadata or reserved address`;
  if (kind === 'private' && !policy.allowPrivate) return `${address} is a loopback, private or shared address`;
  return undefined;
}

/** Why a DNS answer may not be contacted: the first refused address of all of them. */
function answersProblem(answers: LookupAddress[], policy: NetworkPolicy): string | undefined {
  for (const { address } of answers) {
    const problem = addressProblem(address, policy);
    if (problem) return problem;
  }
  return undefined;
}

export class RefusedDestinationError extends Error {
  override name = 'RefusedDestinationError';
  readonly code = 'ERR_WEBHOOK_DESTINATION_REFUSED';
}

/** The URL's host as an IP literal (brackets removed), or undefined for a name. */
export function ipLiteral(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return net.isIP(host) ? host : undefined;
}

/** Checks what can be checked without DNS: scheme, credentials, an IP literal's range. */
export function urlProblem(raw: string, policy: NetworkPolicy): string | undefined {
  if (raw.length > 2000) return 'url must be at most 2000 characters';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute http(s) URL';
  }
  if (url.protocol !== 'https:' && (url.protocol !== 'http:' || policy.httpsOnly)) {
    return policy.httpsOnly ? 'url must use https' : 'url must use https or http';
  }
  if (url.username || url.password) return 'url must not contain credentials';
  if (url.hash || raw.includes('#')) return 'url must not contain a fragment';
  const literal = ipLiteral(url);
  const problem = literal && addressProblem(literal, policy);
  return problem ? `url is refused: ${problem}` : undefined;
}

let lookups: Promise<unknown> = Promise.resolve();

/**
 * Every address of `hostname`, one lookup at a time. `dns.lookup` (the system's resolver, as
 * connections use) holds a thread of libuv's pool until the resolver answers or gives up,
 * seconds when it does not answer, and that pool also runs the argon2id hashes of sign-ins
 * (2 threads on 2 cores, `src/launch.cts`). Queued here, webhook lookups never hold more than
 * one of its threads, however many deliveries and registrations wait on a hung resolver.
 */
function lookupAll(hostname: string, options: LookupOptions = {}): Promise<LookupAddress[]> {
  const answers = lookups.then(() => dns.promises.lookup(hostname, { ...options, all: true }));
  lookups = answers.catch(() => undefined);
  return answers;
}

/** Resolves `hostname` as a connection would and checks every answer. */
export async function resolveProblem(hostname: string, policy: NetworkPolicy): Promise<string | undefined> {
  let answers: LookupAddress[];
  try {
    answers = await lookupAll(hostname, { verbatim: true });
  } catch {
    return `url host ${hostname} cannot be resolved`;
  }
  if (answers.length === 0) return `url host ${hostname} cannot be resolved`;
  const problem = answersProblem(answers, policy);
  return problem && `url is refused: ${hostname} resolves to ${problem}`;
}

/** Full check at registration: syntax, IP literal, DNS. */
export async function webhookUrlProblem(raw: string, policy: NetworkPolicy): Promise<string | undefined> {
  const problem = urlProblem(raw, policy);
  if (problem) return problem;
  const url = new URL(raw);
  return ipLiteral(url) ? undefined : resolveProblem(url.hostname, policy);
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request that refuses any answer outside `policy` (connect-time check;
 * IP literals never reach it, so callers check those with {@link addressProblem}).
 */
export function guardedLookup(policy: NetworkPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    lookupAll(hostname, options).then((answers) => {
      const problem = answersProblem(answers, policy);
      if (problem) return callback(new RefusedDestinationError(`${hostname} resolves to ${problem}`), []);
      if (options.all) return callback(null, answers);
      const first = answers[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      return callback(null, first.address, first.family);
    }, (error: NodeJS.ErrnoException) => callback(error, []));
  };
}
