/**
 * `clients:*`. A client is named by its client_id, exactly.
 *
 * @example node dist/cli.js clients:rotate-secret dBq… --json
 */
import type { Client } from '../generated/prisma/client.js';
import { endpointView } from '../webhooks/webhook-store.js';
import { withAdmin, withClient } from './admin.js';
import { onlyArgument, parse } from './args.js';
import { endedText, fields, iso, json, section, table } from './output.js';
import type { VerbTable } from './verb.js';

const JSON_OPTION = { json: { type: 'boolean' } } as const;

const clientJson = (client: Client) => ({
  client_id: client.clientId, client_name: client.clientName, redirect_uri: client.redirectUri, created_at: iso(client.createdAt), updated_at: iso(client.updatedAt),
});
const named = (client: Client) => `"${client.clientName}" (${client.clientId})`;

export const CLIENT_VERBS: VerbTable = {
  'clients:list': {
    usage: '[--json]',
    summary: 'every client, by name',
    async run(args) {
      const { values } = parse(args, [], JSON_OPTION);
      const clients = await withAdmin((admin) => admin.clients.list());
      if (values.json) return json(clients.map((client) => ({ ...clientJson(client), webhooks: client.webhookCount })));
      if (clients.length === 0) return 'no clients';
      return table(['CLIENT_ID', 'NAME', 'REDIRECT_URI', 'CREATED', 'WEBHOOKS'], clients.map((c) => [c.clientId, c.clientName, c.redirectUri, iso(c.createdAt)!, String(c.webhookCount)]));
    },
  },
  'clients:show': {
    usage: '<client_id> [--json]',
    summary: 'one client, its webhook endpoints and how many users authorized it',
    async run(args) {
      const { values, positionals: [clientId] } = parse(args, ['client_id'], JSON_OPTION);
      const { client, endpoints, authorizedUsers } = await withClient(clientId!, async (admin, client) => ({ client, ...await admin.clients.details(client) }));
      if (values.json) return json({ ...clientJson(client), authorized_users: authorizedUsers, webhooks: endpoints.map(endpointView) });
      const about = fields([
        ['client_id', client.clientId], ['name', client.clientName], ['redirect_uri', client.redirectUri], ['created', iso(client.createdAt)!],
        ['updated', iso(client.updatedAt)!], ['authorized by', `${authorizedUsers} user${authorizedUsers === 1 ? '' : 's'}`],
      ]);
      const hooks = endpoints.map((e) => [e.id, e.url, e.events.join(','), e.enabled ? 'enabled' : `disabled: ${e.disabledReason ?? ''}`]);
      return `${about}\n${section('webhooks', ['ID', 'URL', 'EVENTS', 'STATUS'], hooks)}`;
    },
  },
  'clients:delete': {
    usage: '<client_id>',
    summary: 'delete a client with its grants, tokens and webhook endpoints',
    run: (args, io) => withClient(onlyArgument(args, 'client_id'), async (admin, client) => {
      const { revoked } = await admin.clients.delete(client, io.context);
      return `deleted client ${named(client)}; ${endedText(revoked, (entry) => entry.username ?? entry.accountId)}`;
    }),
  },
  'clients:rotate-secret': {
    usage: '<client_id> [--json]',
    summary: 'a new client_secret, printed this once; the old one stops working at once',
    async run(args, io) {
      const { values, positionals: [clientId] } = parse(args, ['client_id'], JSON_OPTION);
      const { client, secret } = await withClient(clientId!, async (admin, client) => ({ client, secret: await admin.clients.rotateSecret(client, io.context) }));
      if (values.json) return json({ client_id: client.clientId, client_secret: secret });
      return `new client_secret of ${named(client)}, shown this once:\n${secret}`;
    },
  },
  'clients:set-redirect-uri': {
    usage: '<client_id> <redirect_uri>',
    summary: 'change the registered redirect URI (checked as at registration)',
    async run(args, io) {
      const { positionals: [clientId, redirectUri] } = parse(args, ['client_id', 'redirect_uri'], {});
      return withClient(clientId!, async (admin, client) => {
        const { changed } = await admin.clients.setRedirectUri(client, redirectUri!, io.context);
        return changed ? `redirect_uri of ${named(client)} is now ${redirectUri}` : `redirect_uri of ${named(client)} was ${redirectUri} already`;
      });
    },
  },
};
