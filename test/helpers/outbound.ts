/**
 * Outbound policies for tests that build a webhook service or a fetch by hand: the machine's
 * resolver (hosts file, then c-ares), bounded as the service's are.
 *
 * @example createWebhookService({ …, policy: testPolicy({ allowPrivate: true }) })
 */
import { createHostLookup, systemResolve } from '../../src/outbound/host-lookup.js';
import type { Resolve } from '../../src/outbound/host-lookup.js';
import type { NetworkPolicy } from '../../src/outbound/ssrf-guard.js';

export function testPolicy({ httpsOnly = false, allowPrivate = true, resolve = systemResolve(), timeoutMs = 2000 }: { httpsOnly?: boolean; allowPrivate?: boolean; resolve?: Resolve; timeoutMs?: number } = {}): NetworkPolicy {
  return { httpsOnly, allowPrivate, lookup: createHostLookup({ resolve, timeoutMs }) };
}
