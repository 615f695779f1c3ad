/**
 * Registered client applications. A registration and its audit row (`client.registered`) are
 * written in one transaction.
 *
 * @example const { client, clientSecret } = await clients.register({ clientName: 'Demo', redirectUri }, requestContext(ctx, ANONYMOUS));
 */
import { ANONYMOUS } from '../audit/audit-log.js';
import type { AuditContext, AuditLog } from '../audit/audit-log.js';
import type { Client, PrismaClient } from '../generated/prisma/client.js';
import { redirectUriProblem } from './redirect-uri.js';
import { generateClientId, generateClientSecret, hashClientSecret } from './credentials.js';

export type { Client };

export class ClientInputError extends Error {
  override name = 'ClientInputError';
}

export interface ClientStore {
  /** Validates and registers a client; the plaintext secret is returned this once only. Registration is open: `context` defaults to an anonymous actor. */
  register(input: { clientName: unknown; redirectUri: unknown }, context?: AuditContext): Promise<{ client: Client; clientSecret: string }>;
  find(clientId: string): Promise<Client | null>;
}

const MAX_NAME_LENGTH = 100;

/** The trimmed name, or a {@link ClientInputError} saying what is wrong. */
export function validName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new ClientInputError('client_name is required');
  const name = value.trim();
  if (name.length > MAX_NAME_LENGTH) throw new ClientInputError(`client_name must be at most ${MAX_NAME_LENGTH} characters`);
  // Shown to users on the login and consent pages: no control characters (C0, DEL, C1), no
  // direction overrides or isolates (which can show a name reversed: Unicode TR #36 §2.1), and
  // something visible (not only zero-width or other format characters).
  if (/[\p{Cc}\u202a-\u202e\u2066-\u2069]/u.test(name)) {
    throw new ClientInputError('client_name must not contain control characters or text-direction overrides');
  }
  if (!/[^\p{Cf}\p{White_Space}]/u.test(name)) throw new ClientInputError('client_name must contain a visible character');
  return name;
}

/** The redirect URI as registered, or a {@link ClientInputError} (rules in redirect-uri.ts). */
export function validRedirectUri(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new ClientInputError('redirect_uri is required');
  const problem = redirectUriProblem(value);
  if (problem) throw new ClientInputError(problem);
  return value;
}

export function createClientStore(prisma: PrismaClient, audit: AuditLog): ClientStore {
  return {
    async register(input, context = { actor: ANONYMOUS }) {
      const clientName = validName(input.clientName);
      const redirectUri = validRedirectUri(input.redirectUri);
      const clientSecret = generateClientSecret();
      const client = await audit.within((write) => prisma.$transaction(async (tx) => {
        const created = await tx.client.create({
          data: { clientId: generateClientId(), clientSecretHash: hashClientSecret(clientSecret), clientName, redirectUri },
        });
        await write(tx, 'client.registered', { client: created.clientId, detail: { client_name: clientName, redirect_uri: redirectUri } }, context);
        return created;
      }));
      return { client, clientSecret };
    },
    find(clientId) {
      return prisma.client.findUnique({ where: { clientId } });
    },
  };
}
