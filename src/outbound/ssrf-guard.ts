// Kept over request-filtering-agent: allowing private networks there allows link-local and metadata too, and its deny list misses their IPv6 spellings (::ffff:169.254.169.254).
/**
 * Where the service's own requests may go (webhook deliveries, Client ID Metadata Documents). A
 * URL chosen by a client is fetched from inside our network, so addresses that reach our own
 * infrastructure are refused: loopback, private, shared (100.64/10), local-use NAT64 and other
 * non-public ranges unless private networks are allowed (`WEBHOOK_ALLOW_PRIVATE_NETWORKS`,
 * `CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS`); link-local and cloud-metadata addresses always.
 * Each IPv6 spelling that embeds an IPv4 address (mapped, SIIT, compatible, NAT64, 6to4) is
 * judged by that IPv4 address. URLs are checked when registered (their DNS answers included) and
 * again at connect time through the socket's `lookup`, so a name that later resolves elsewhere
 * (DNS rebinding) is refused too. Names are looked up by the policy's bounded lookup
 * (host-lookup.ts). A refusal says "destination not allowed" and which rule, never the address a
 * name resolved to: that would map our internal names for any client.
 *
 * @see https://cheatsheetseries.owasp.org/cheatsheets/Server_Side_Request_Forgery_Prevention_Cheat_Sheet.html
 */
import type { LookupAddress, LookupOptions } from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { parseAddress } from './ip-address.js';
import type { HostLookup } from './host-lookup.js';

export interface NetworkPolicy {
  /** Only https URLs (production). */
  readonly httpsOnly: boolean;
  /** Loopback, private and shared ranges are allowed (development, tests). */
  readonly allowPrivate: boolean;
  /** How names are looked up: bounded, each use its own (host-lookup.ts). */
  readonly lookup: HostLookup;
  /** Told of each name refused for what it resolved to, with the address (for the log: a refusal itself never names it). */
  readonly onRefused?: (refusal: { host: string; address: string; rule: string }) => void;
}

/** What a URL or connection check needs of a policy (no lookup). */
export type AddressPolicy = Pick<NetworkPolicy, 'httpsOnly' | 'allowPrivate'>;

export type AddressClass = 'public' | 'private' | 'forbidden';

const cidr = (range: string) => ipaddr.parseCIDR(range);

/** Every range that is not public, matched in order: forbidden before private. */
const RANGES = {
  /** Never a webhook destination: link-local, cloud metadata, "this network", multicast, reserved. */
  forbidden: [
    cidr('0.0.0.0/8'), // "this network"; 0.0.0.0 reaches the local host on Linux
    cidr('169.254.0.0/16'), // link-local, incl. 169.254.169.254 (AWS, GCP, Azure metadata)
    cidr('100.100.100.200/32'), // Alibaba Cloud metadata
    cidr('224.0.0.0/4'), // multicast
    cidr('240.0.0.0/4'), // reserved, broadcast
    cidr('::/128'), // unspecified
    cidr('fe80::/10'), // link-local
    cidr('fd00:ec2::254/128'), // AWS metadata over IPv6
    cidr('ff00::/8'), // multicast
  ],
  /** Our own or our neighbours' networks: refused unless private networks are allowed. */
  private: [
    cidr('127.0.0.0/8'), // loopback
    cidr('10.0.0.0/8'),
    cidr('172.16.0.0/12'),
    cidr('192.168.0.0/16'),
    cidr('100.64.0.0/10'), // shared address space (carrier-grade NAT)
    cidr('192.0.0.0/24'), // IETF protocol assignments
    cidr('198.18.0.0/15'), // benchmarking
    cidr('::1/128'), // loopback
    cidr('fc00::/7'), // unique local
    cidr('64:ff9b:1::/48'), // local-use NAT64 (RFC 8215): translated to addresses of the operator's choosing
    cidr('fec0::/10'), // site-local (deprecated)
  ],
};

/** IPv6 prefixes whose addresses stand for an IPv4 address, and the byte it starts at. */
const EMBEDDING: [ReturnType<typeof cidr>, number][] = [
  [cidr('::ffff:0:0/96'), 12], // IPv4-mapped (RFC 4291 §2.5.5.2)
  [cidr('::ffff:0:0:0/96'), 12], // SIIT (RFC 6145)
  [cidr('64:ff9b::/96'), 12], // NAT64 well-known prefix (RFC 6052 §2.1)
  [cidr('2002::/16'), 2], // 6to4 (RFC 3056 §2)
  [cidr('::/96'), 12], // IPv4-compatible (RFC 4291 §2.5.5.1, deprecated)
];
/** `::`, `::1` and their neighbours are IPv6's own, not IPv4-compatible addresses. */
const LOWEST = cidr('::/120');

/** The IPv4 address an IPv6 address stands for, if it embeds one. */
function embeddedIpv4(ip: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (ip.match(LOWEST)) return undefined;
  const at = EMBEDDING.find(([prefix]) => ip.match(prefix))?.[1];
  return at === undefined ? undefined : new ipaddr.IPv4(ip.toByteArray().slice(at, at + 4));
}

/** How an IP address (either family; brackets and a zone allowed) is treated; anything else is forbidden. */
export function classifyAddress(address: string): AddressClass {
  const ip = parseAddress(address);
  if (!ip) return 'forbidden';
  const judged = ip instanceof ipaddr.IPv6 ? embeddedIpv4(ip) ?? ip : ip;
  return ipaddr.subnetMatch(judged, RANGES, 'public') as AddressClass;
}

/** The rule a refused address breaks, in words without the address. */
const RULES = {
  forbidden: 'a link-local, metadata or reserved address',
  private: 'a loopback, private or shared address',
} as const;

/** Which rule refuses `address` under `policy`, or undefined when it may be contacted. */
function addressRule(address: string, policy: AddressPolicy): string | undefined {
  const kind = classifyAddress(address);
  if (kind === 'forbidden') return RULES.forbidden;
  if (kind === 'private' && !policy.allowPrivate) return RULES.private;
  return undefined;
}

/** Why `address` (an IP literal the client wrote) may not be contacted under `policy`, or undefined when it may. */
export function addressProblem(address: string, policy: AddressPolicy): string | undefined {
  const rule = addressRule(address, policy);
  return rule && `destination not allowed: ${address} is ${rule}`;
}

/** Why a DNS answer may not be contacted: the rule the first refused address breaks, and that address (for the log only). */
function answersProblem(answers: LookupAddress[], policy: AddressPolicy): { rule: string; address: string } | undefined {
  for (const { address } of answers) {
    const rule = addressRule(address, policy);
    if (rule) return { rule, address };
  }
  return undefined;
}

/** A destination the policy refuses; `message` names the rule, `resolved` the address (for logs, never for clients). */
export class RefusedDestinationError extends Error {
  override name = 'RefusedDestinationError';
  readonly code = 'ERR_DESTINATION_REFUSED';
  constructor(message: string, readonly resolved?: string) {
    super(message);
  }
}

/** The refusal of a name whose answer breaks `rule`: the name and the rule, not the address. */
const refusedName = (hostname: string, rule: string) => `destination not allowed: ${hostname} resolves to ${rule}`;

/** The URL's host as an IP literal (brackets removed), or undefined for a name. */
export function ipLiteral(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return net.isIP(host) ? host : undefined;
}

/** Checks what can be checked without DNS: scheme, credentials, an IP literal's range. */
export function urlProblem(raw: string, policy: AddressPolicy): string | undefined {
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
  return literal && addressProblem(literal, policy);
}

/** Resolves `hostname` as a connection would and checks every answer. */
export async function resolveProblem(hostname: string, policy: NetworkPolicy): Promise<string | undefined> {
  let answers: LookupAddress[];
  try {
    answers = await policy.lookup(hostname);
  } catch (error) {
    return (error as { code?: unknown }).code === 'ENOTFOUND' ? `url host ${hostname} cannot be resolved` : `url host ${hostname} could not be resolved in time; try again`;
  }
  const problem = answersProblem(answers, policy);
  if (!problem) return undefined;
  policy.onRefused?.({ host: hostname, ...problem });
  return refusedName(hostname, problem.rule);
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
 * IP literals never reach it, so callers check those with {@link addressProblem}). `signal` is the
 * request's: when it gives up, so does its lookup.
 */
export function guardedLookup(policy: NetworkPolicy, signal?: AbortSignal) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    policy.lookup(hostname, { family: typeof options.family === 'number' ? options.family : undefined, signal }).then((answers) => {
      const problem = answersProblem(answers, policy);
      if (problem) {
        policy.onRefused?.({ host: hostname, ...problem });
        return callback(new RefusedDestinationError(refusedName(hostname, problem.rule), problem.address), []);
      }
      if (options.all) return callback(null, answers);
      const first = answers[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      return callback(null, first.address, first.family);
    }, (error: NodeJS.ErrnoException) => callback(error, []));
  };
}
