/**
 * Rotating an endpoint's signing secret: a new secret, returned this once, signs every delivery
 * from now on; the one it replaces goes on signing beside it until the grace ends (signing.ts puts
 * both signatures in `webhook-signature`), so a receiver switches when it likes. A grace of 0
 * drops the old secret at once (a leaked secret). The change and its audit row
 * (`webhook.secret_rotated`) commit together.
 *
 * @example const rotated = await rotateEndpointSecret({ changes: records.change, clock }, clientId, endpointId, 3_600_000, context);
 */
import type { AuditContext } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../audit/records.js';
import { graceEnd } from '../clients/secret-grace.js';
import { formatGrace } from '../config/durations.js';
import { generateSigningSecret } from './signing.js';
import { isWellFormedEndpointId } from './webhook-store.js';
import type { WebhookEndpoint } from './webhook-store.js';

export interface RotationDependencies {
  /** Where the change is made with its audit row (audit/records.ts `records.change`). */
  changes: ChangeTransaction;
  clock: () => Date;
}

/** The endpoint as it now is and its new secret; undefined when the client has no such endpoint. */
export async function rotateEndpointSecret(
  { changes, clock }: RotationDependencies,
  clientId: string,
  endpointId: string,
  graceMs: number,
  context: AuditContext,
): Promise<{ endpoint: WebhookEndpoint; secret: string } | undefined> {
  if (!isWellFormedEndpointId(endpointId)) return undefined;
  const secret = generateSigningSecret();
  return changes(async (tx, record) => {
    // Locked until commit: two rotations at once take turns, and neither's secret is lost.
    const [held] = await tx.$queryRaw<{ secret: string }[]>`
      SELECT secret FROM webhook_endpoints WHERE id = ${endpointId} AND client_id = ${clientId} FOR UPDATE`;
    if (!held) return undefined;
    const until = graceEnd(clock(), graceMs);
    const endpoint = await tx.webhookEndpoint.update({
      where: { id: endpointId },
      data: { secret, previousSecret: graceMs > 0 ? held.secret : null, previousSecretExpiresAt: until },
    });
    const detail = { webhook_id: endpointId, grace: formatGrace(graceMs), previous_secret_expires_at: until.toISOString() };
    await record.audit('webhook.secret_rotated', { client: clientId, detail }, context);
    return { endpoint, secret };
  });
}
