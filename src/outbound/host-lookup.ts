/**
 * Name lookups for the requests the service sends out (webhook deliveries, Client ID Metadata
 * Documents), bounded so that a name whose nameserver never answers costs only its own request:
 *
 * - **No pool thread.** Names are resolved with c-ares (`dns.Resolver`), which runs on the event
 *   loop, not with `dns.lookup` (getaddrinfo), which holds a thread of libuv's pool until the
 *   resolver answers or gives up. That pool runs argon2id for sign-ins (src/launch.cts sizes it),
 *   and keeps all of its threads for them, however many lookups hang.
 * - **The hosts file first.** `localhost` and its subdomains are loopback (RFC 6761 §6.3), and a
 *   name in /etc/hosts gets its addresses there, as the system resolver would give them.
 * - **A deadline of its own.** Every lookup ends by OUTBOUND_LOOKUP_TIMEOUT_MS, or sooner when its
 *   request gives up (its AbortSignal): either way its queries are cancelled, nothing is left
 *   running or queued behind it.
 * - **No queue, one budget per use.** Each use (webhooks, metadata documents) has its own
 *   {@link HostLookup}, with at most `maxInFlight` lookups running; one more is refused at once
 *   instead of waiting. So a flood of unresolvable names under one use refuses its own excess
 *   and never delays a lookup of the other use, nor, below the bound, one of its own.
 *
 * @example const lookup = createHostLookup({ resolve: systemResolve(), timeoutMs: 2000, maxInFlight: 64 }); await lookup('example.com');
 */
import dns from 'node:dns';
import type { LookupAddress } from 'node:dns';
import fs from 'node:fs/promises';
import net from 'node:net';

/** Resolves a name to its addresses; rejects once `signal` aborts. */
export type Resolve = (hostname: string, signal: AbortSignal) => Promise<LookupAddress[]>;

export interface HostLookup {
  /** Every address of `hostname` (of `family` only, when given). Rejects with a {@link LookupError}. */
  (hostname: string, options?: { family?: number; signal?: AbortSignal | undefined }): Promise<LookupAddress[]>;
  /** Lookups running now. */
  readonly inFlight: number;
}

/** Why a lookup gave no address: `ENOTFOUND` (no such name), `ETIMEOUT` (no answer in time), `EBUSY` (too many running). */
export class LookupError extends Error {
  override name = 'LookupError';
  constructor(readonly code: 'ENOTFOUND' | 'ETIMEOUT' | 'EBUSY', message: string) {
    super(message);
  }
}

const LOOPBACK: LookupAddress[] = [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }];
const HOSTS_FILE = '/etc/hosts';
/** How long a read of the hosts file is reused. */
const HOSTS_TTL_MS = 5000;

let hosts: { read: number; table: Promise<Map<string, LookupAddress[]>> } | undefined;

async function readHosts(): Promise<Map<string, LookupAddress[]>> {
  const table = new Map<string, LookupAddress[]>();
  const text = await fs.readFile(HOSTS_FILE, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    const family = address ? net.isIP(address) : 0;
    if (family === 0) continue;
    for (const name of names) {
      const key = name.toLowerCase();
      table.set(key, [...(table.get(key) ?? []), { address: address!, family }]);
    }
  }
  return table;
}

function hostsTable(): Promise<Map<string, LookupAddress[]>> {
  if (!hosts || Date.now() - hosts.read > HOSTS_TTL_MS) hosts = { read: Date.now(), table: readHosts() };
  return hosts.table;
}

/**
 * The machine's resolver without its thread pool: the hosts file and `localhost` first, then the
 * nameservers of /etc/resolv.conf through c-ares, A and AAAA at once. `perTryMs` bounds each
 * query; the caller's signal cancels them.
 */
export function systemResolve({ perTryMs = 1000, tries = 2 }: { perTryMs?: number; tries?: number } = {}): Resolve {
  return async (hostname, signal) => {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) return LOOPBACK;
    const listed = (await hostsTable()).get(name);
    if (listed) return listed;
    // A channel of its own, so that cancelling it ends this lookup's queries and no other's.
    const resolver = new dns.promises.Resolver({ timeout: perTryMs, tries });
    const cancel = () => resolver.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
      const answers = [
        ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
        ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
      ];
      if (answers.length > 0) return answers;
      const reason = (v4.status === 'rejected' ? v4.reason : undefined) as NodeJS.ErrnoException | undefined;
      if (reason?.code === dns.TIMEOUT || reason?.code === dns.CANCELLED) throw new LookupError('ETIMEOUT', `${hostname}: no answer from the nameservers`);
      throw new LookupError('ENOTFOUND', `${hostname} has no address`);
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  };
}

/** Lookups of one use running at once: far above what honest traffic needs, low enough that a flood costs little memory. */
export const LOOKUPS_IN_FLIGHT = 128;

export interface HostLookupOptions {
  resolve: Resolve;
  /** Every lookup's deadline (OUTBOUND_LOOKUP_TIMEOUT_MS). */
  timeoutMs: number;
  /** Lookups of this use running at once, at most ({@link LOOKUPS_IN_FLIGHT}); one more is refused at once. */
  maxInFlight?: number;
}

export function createHostLookup({ resolve, timeoutMs, maxInFlight = LOOKUPS_IN_FLIGHT }: HostLookupOptions): HostLookup {
  let inFlight = 0;
  const lookup = async (hostname: string, { family, signal }: { family?: number; signal?: AbortSignal | undefined } = {}) => {
    if (signal?.aborted) throw new LookupError('ETIMEOUT', `${hostname}: the request gave up before its lookup`);
    if (inFlight >= maxInFlight) throw new LookupError('EBUSY', `${hostname}: ${maxInFlight} lookups are running already`);
    inFlight += 1;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const giveUp = () => controller.abort();
    signal?.addEventListener('abort', giveUp, { once: true });
    try {
      const ended = new Promise<never>((_resolve, reject) => {
        controller.signal.addEventListener('abort', () => reject(new LookupError('ETIMEOUT', `${hostname}: no answer within ${timeoutMs} ms`)), { once: true });
      });
      ended.catch(() => {}); // aborted in `finally` after an answer too: nobody waits then
      const answers = await Promise.race([resolve(hostname, controller.signal), ended]);
      const wanted = family === 4 || family === 6 ? answers.filter((answer) => answer.family === family) : answers;
      if (wanted.length === 0) throw new LookupError('ENOTFOUND', `${hostname} has no address`);
      return wanted;
    } catch (error) {
      if (error instanceof LookupError) throw error;
      throw new LookupError('ENOTFOUND', `${hostname} has no address`);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', giveUp);
      controller.abort(); // a resolver still at work stops now
      inFlight -= 1;
    }
  };
  return Object.defineProperty(lookup, 'inFlight', { get: () => inFlight }) as HostLookup;
}
