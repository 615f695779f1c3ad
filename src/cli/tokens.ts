/**
 * `tokens:revoke`: ends grants with every code, access and refresh token under them, at once,
 * as a user's revocation does; the clients' webhooks get `token.revoked` (reason
 * `admin_revoked`). `--user` alone: all of that user's; `--client` alone: all of that client's;
 * both: that user's grants to that client.
 *
 * @example node dist/cli.js tokens:revoke --user alice
 */
import { withAdmin } from './admin.js';
import { parse, UsageError } from './args.js';
import { endedText, json } from './output.js';
import type { VerbTable } from './verb.js';

export const TOKEN_VERBS: VerbTable = {
  'tokens:revoke': {
    usage: '(--user <user> | --client <client_id> | both) [--json]',
    summary: "end a user's or a client's grants and tokens at once",
    async run(args, io) {
      const { values } = parse(args, [], { user: { type: 'string' }, client: { type: 'string' }, json: { type: 'boolean' } });
      if (!values.user && !values.client) throw new UsageError('missing --user <user> or --client <client_id>');
      const revoked = await withAdmin(io, async (admin) => {
        const user = values.user ? await admin.users.find(values.user) : undefined;
        const client = values.client ? await admin.clients.find(values.client) : undefined;
        return user ? admin.users.revokeTokens(user, io.context, client) : admin.clients.revokeTokens(client!, io.context);
      });
      if (values.json) {
        return json(revoked.map((entry) => ({ user_id: entry.accountId, username: entry.username ?? null, client_id: entry.clientId, grants: entry.grantIds.length })));
      }
      return endedText(revoked, (entry) => `${entry.username ?? entry.accountId} → ${entry.clientName}`);
    },
  },
};
