/**
 * The outbound policies of the service's uses of the network, each with its own bounded lookup
 * (host-lookup.ts), so that none waits on another: webhook deliveries (and the check of a webhook
 * URL at registration) under WEBHOOK_ALLOW_PRIVATE_NETWORKS, https in production; Client ID
 * Metadata Documents, and clients' key sets (jwks_uri), under CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS,
 * https always. Key sets have lookups of their own: assertions arrive at the token endpoint's
 * rate, and must not take the lookups that sign-ins by document need.
 *
 * @example const { webhooks, documents, keySets } = outboundPolicies(config, { onRefused: (r) => logger.warn(r, 'destination refused') });
 */
import type { Config } from '../config.js';
import { createHostLookup, systemResolve } from './host-lookup.js';
import type { Resolve } from './host-lookup.js';
import type { NetworkPolicy } from './ssrf-guard.js';

export interface OutboundPolicies {
  readonly webhooks: NetworkPolicy;
  readonly documents: NetworkPolicy;
  readonly keySets: NetworkPolicy;
}

export function outboundPolicies(
  config: Pick<Config, 'production' | 'webhookAllowPrivateNetworks' | 'standardClients' | 'timeouts'>,
  { resolve = systemResolve(), onRefused }: { resolve?: Resolve; onRefused?: NetworkPolicy['onRefused'] } = {},
): OutboundPolicies {
  const lookup = () => createHostLookup({ resolve, timeoutMs: config.timeouts.outboundLookupMs });
  const refusals = onRefused ? { onRefused } : {};
  return {
    webhooks: { httpsOnly: config.production, allowPrivate: config.webhookAllowPrivateNetworks, lookup: lookup(), ...refusals },
    documents: { httpsOnly: true, allowPrivate: config.standardClients.metadataDocuments.allowPrivateNetworks, lookup: lookup(), ...refusals },
    keySets: { httpsOnly: true, allowPrivate: config.standardClients.metadataDocuments.allowPrivateNetworks, lookup: lookup(), ...refusals },
  };
}
