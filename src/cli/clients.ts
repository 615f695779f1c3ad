/**
 * `clients:*`. A client is named by its client_id, exactly.
 *
 * @example node dist/cli.js clients:rotate-secret dBq… --grace 1h --json
 */
import { previousSecretWorks } from '../clients/client-settings.js';
import { requireGrace } from '../config/durations.js';
import type { Client } from '../generated/prisma/client.js';
import { endpointView } from '../webhooks/webhook-store.js';
import { withAdmin, withClient } from './admin.js';
import { ArgumentError, onlyArgument, parse, UsageError } from './args.js';
import { endedText, fields, iso, json, section, table } from './output.js';
import type { VerbTable } from './verb.js';

const JSON_OPTION = { json: { type: 'boolean' } } as const;

const clientJson = (client: Client) => ({
  client_id: client.clientId, client_name: client.clientName, redirect_uri: client.redirectUri, created_at: iso(client.createdAt), updated_at: iso(client.updatedAt),
});
const named = (client: Client) => `"${client.clientName}" (${client.clientId})`;

/** What the previous secret does now: works until…, stopped working at…, or none. */
function previousSecret(client: Client): string {
  const at = iso(client.previousSecretExpiresAt);
  if (at === null) return 'none (the secret was never rotated)';
  return previousSecretWorks(client, new Date()) ? `works until ${at}` : `stopped working at ${at}`;
}

/** `--grace`, checked before anything is changed. */
function graceOption(value: string | undefined): number | undefined {
  return value === undefined ? undefined : requireGrace(value, (problem) => new ArgumentError(`--grace ${problem}`));
}

export const CLIENT_VERBS: VerbTable = {
  'clients:create': {
    usage: '--name <name> --redirect-uri <uri> [--json]',
    summary: 'a client the operator vouches for (consent shows no "registered itself" note; never swept as idle); its client_secret is printed this once',
    async run(args, io) {
      const { values } = parse(args, [], { ...JSON_OPTION, name: { type: 'string' }, 'redirect-uri': { type: 'string' } });
      const missing = [['--name', values.name], ['--redirect-uri', values['redirect-uri']]].filter(([, value]) => !value).map(([name]) => name);
      if (missing.length) throw new UsageError(`missing ${missing.join(', ')}`);
      const { client, clientSecret } = await withAdmin(io, (admin) => admin.clients.create({ clientName: values.name!, redirectUri: values['redirect-uri']! }, io.context));
      if (values.json) return json({ ...clientJson(client), client_secret: clientSecret });
      // The secret stays the last line, for whoever reads it with `tail -1`.
      return `created client ${named(client)}. Its client_secret, shown this once:\n${clientSecret}`;
    },
  },
  'clients:list': {
    usage: '[--json]',
    summary: 'every client, by name',
    async run(args, io) {
      const { values } = parse(args, [], JSON_OPTION);
      const clients = await withAdmin(io, (admin) => admin.clients.list());
      if (values.json) return json(clients.map((client) => ({ ...clientJson(client), webhooks: client.webhookCount })));
      if (clients.length === 0) return 'no clients';
      return table(['CLIENT_ID', 'NAME', 'REDIRECT_URI', 'CREATED', 'WEBHOOKS'], clients.map((c) => [c.clientId, c.clientName, c.redirectUri, iso(c.createdAt)!, String(c.webhookCount)]));
    },
  },
  'clients:show': {
    usage: '<client_id> [--json]',
    summary: 'one client, its webhook endpoints and how many users authorized it',
    async run(args, io) {
      const { values, positionals: [clientId] } = parse(args, ['client_id'], JSON_OPTION);
      const { client, endpoints, authorizedUsers } = await withClient(io, clientId!, async (admin, client) => ({ client, ...await admin.clients.details(client) }));
      if (values.json) {
        return json({
          ...clientJson(client), previous_secret_expires_at: iso(client.previousSecretExpiresAt), previous_secret_works: previousSecretWorks(client, new Date()),
          authorized_users: authorizedUsers, webhooks: endpoints.map(endpointView),
        });
      }
      const about = fields([
        ['client_id', client.clientId], ['name', client.clientName], ['redirect_uri', client.redirectUri], ['created', iso(client.createdAt)!],
        ['updated', iso(client.updatedAt)!], ['previous secret', previousSecret(client)], ['authorized by', `${authorizedUsers} user${authorizedUsers === 1 ? '' : 's'}`],
      ]);
      const hooks = endpoints.map((e) => [e.id, e.url, e.events.join(','), e.enabled ? 'enabled' : `disabled: ${e.disabledReason ?? ''}`]);
      return `${about}\n${section('webhooks', ['ID', 'URL', 'EVENTS', 'STATUS'], hooks)}`;
    },
  },
  'clients:delete': {
    usage: '<client_id>',
    summary: 'delete a client with its grants, tokens and webhook endpoints',
    run: (args, io) => withClient(io, onlyArgument(args, 'client_id'), async (admin, client) => {
      const { revoked } = await admin.clients.delete(client, io.context);
      return `deleted client ${named(client)}; ${endedText(revoked, (entry) => entry.username ?? entry.accountId)}`;
    }),
  },
  'clients:rotate-secret': {
    usage: '<client_id> [--grace <duration>] [--json]',
    summary: 'a new client_secret, printed this once; the old one works for the grace (CLIENT_SECRET_ROTATION_GRACE, 24h unless set; --grace 0 ends it at once)',
    async run(args, io) {
      const { values, positionals: [clientId] } = parse(args, ['client_id'], { ...JSON_OPTION, grace: { type: 'string' } });
      const graceMs = graceOption(values.grace);
      const { client, clientSecret } = await withClient(io, clientId!, (admin, found) => admin.clients.rotateSecret(found, io.context, graceMs));
      if (values.json) return json({ client_id: client.clientId, client_secret: clientSecret, previous_secret_expires_at: iso(client.previousSecretExpiresAt) });
      // The secret stays the last line, for whoever reads it with `tail -1`.
      const previous = previousSecretWorks(client, new Date()) ? `works until ${iso(client.previousSecretExpiresAt)}` : 'no longer works';
      return `new client_secret of ${named(client)}; the previous one ${previous}. Shown this once:\n${clientSecret}`;
    },
  },
  'clients:end-previous-secret': {
    usage: '<client_id>',
    summary: 'end the previous client_secret now, before its grace is over',
    run: (args, io) => withClient(io, onlyArgument(args, 'client_id'), async (admin, found) => {
      const { ended, client } = await admin.clients.endPreviousSecret(found, io.context);
      return ended ? `the previous client_secret of ${named(client)} no longer works` : `${named(client)} has no previous client_secret that still works: nothing to end`;
    }),
  },
  'clients:set-redirect-uri': {
    usage: '<client_id> <redirect_uri>',
    summary: 'change the registered redirect URI (checked as at registration)',
    async run(args, io) {
      const { positionals: [clientId, redirectUri] } = parse(args, ['client_id', 'redirect_uri'], {});
      return withClient(io, clientId!, async (admin, client) => {
        const { changed } = await admin.clients.setRedirectUri(client, redirectUri!, io.context);
        return changed ? `redirect_uri of ${named(client)} is now ${redirectUri}` : `redirect_uri of ${named(client)} was ${redirectUri} already`;
      });
    },
  },
};
