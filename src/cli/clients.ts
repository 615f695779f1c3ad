/**
 * `clients:*`. A client is named by its client_id, exactly.
 *
 * @example node dist/cli.js clients:rotate-secret dBq… --grace 1h --json
 */
import { ClientMetadataError, describedBy, registeredMetadata } from '../clients/client-metadata.js';
import { previousSecretWorks } from '../clients/client-settings.js';
import { requireGrace } from '../config/durations.js';
import type { Client } from '../generated/prisma/client.js';
import { endpointView } from '../webhooks/webhook-store.js';
import { withAdmin, withClient } from './admin.js';
import { ArgumentError, onlyArgument, parse, UsageError } from './args.js';
import { describedBody, DESCRIBING_OPTIONS, KEY_OPTIONS_USAGE, keyFields, LOGOUT_OPTIONS, LOGOUT_OPTIONS_USAGE } from './client-options.js';
import { logoutFieldsOf } from '../clients/client-metadata.js';
import { urlProblem } from '../outbound/ssrf-guard.js';
import { outboundPolicies } from '../outbound/policies.js';
import { loadConfig } from '../config.js';
import { endedText, fields, iso, json, section, table } from './output.js';
import type { VerbTable } from './verb.js';

const JSON_OPTION = { json: { type: 'boolean' } } as const;

/** How a client described by its metadata authenticates and what it may do (nothing for the spec's shape). */
function describedJson(client: Client) {
  const metadata = describedBy(client);
  if (!metadata) return {};
  const keys = metadata.jwks_uri ? { jwks_uri: metadata.jwks_uri } : metadata.jwks ? { jwks_keys: metadata.jwks.keys.length } : {};
  return { token_endpoint_auth_method: metadata.token_endpoint_auth_method, grant_types: metadata.grant_types, ...keys };
}

/** Its logout URIs, if registered (either shape). */
const logoutJson = (client: Client) => logoutFieldsOf(client);

const clientJson = (client: Client) => ({
  client_id: client.clientId, client_name: client.clientName, redirect_uri: client.redirectUri, created_at: iso(client.createdAt), updated_at: iso(client.updatedAt),
  ...describedJson(client),
  ...logoutJson(client),
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
    usage: `--name <name> [--redirect-uri <uri>] [--grant-types <a,b>] [--application-type web|native] [${KEY_OPTIONS_USAGE.slice(1, -1)}] ${LOGOUT_OPTIONS_USAGE} [--json]`,
    summary: 'a client the operator vouches for (consent shows no "registered itself" note; never swept as idle): its client_secret is printed this once, unless it signs with its keys (--jwks-file, --jwks-uri: private_key_jwt). --grant-types client_credentials makes a machine client (no redirect URI)',
    async run(args, io) {
      const { values } = parse(args, [], { ...JSON_OPTION, name: { type: 'string' }, 'redirect-uri': { type: 'string' }, ...DESCRIBING_OPTIONS, ...LOGOUT_OPTIONS });
      const body = values.name ? describedBody(values.name, values) : undefined;
      const missing = [['--name', values.name], ...(body ? [] : [['--redirect-uri', values['redirect-uri']]])].filter(([, value]) => !value).map(([name]) => name);
      if (missing.length) throw new UsageError(`missing ${missing.join(', ')}`);
      let created;
      if (body) {
        let metadata;
        try {
          metadata = registeredMetadata(body, { clientCredentials: true, backchannelDestination: (uri) => urlProblem(uri, outboundPolicies(loadConfig(io.env)).webhooks) });
        } catch (error) {
          if (error instanceof ClientMetadataError) throw new ArgumentError(error.message);
          throw error;
        }
        created = await withAdmin(io, (admin) => admin.clients.createDescribed(metadata, io.context));
      } else {
        const logout = { postLogoutRedirectUri: values['post-logout-redirect-uri'], backchannelLogoutUri: values['backchannel-logout-uri'] };
        created = await withAdmin(io, (admin) => admin.clients.create({ clientName: values.name!, redirectUri: values['redirect-uri']!, ...logout }, io.context));
      }
      const { client, clientSecret } = created;
      if (values.json) return json({ ...clientJson(client), ...(clientSecret === undefined ? {} : { client_secret: clientSecret }) });
      if (clientSecret === undefined) return `created client ${named(client)}: it authenticates with assertions signed by its keys (private_key_jwt); it has no secret`;
      // The secret stays the last line, for whoever reads it with `tail -1`.
      return `created client ${named(client)}. Its client_secret, shown this once:\n${clientSecret}`;
    },
  },
  'clients:set-jwks': {
    usage: `<client_id> ${KEY_OPTIONS_USAGE}`,
    summary: 'the client authenticates with assertions signed by these keys from now on (private_key_jwt, RFC 7523): its secrets end, and so does its settings page',
    async run(args, io) {
      const { values, positionals: [clientId] } = parse(args, ['client_id'], { 'jwks-file': DESCRIBING_OPTIONS['jwks-file'], 'jwks-uri': DESCRIBING_OPTIONS['jwks-uri'], 'signing-alg': DESCRIBING_OPTIONS['signing-alg'] });
      if ((values['jwks-file'] === undefined) === (values['jwks-uri'] === undefined)) throw new UsageError('give one of --jwks-file and --jwks-uri');
      const keys = keyFields(values);
      const { client, changed } = await withClient(io, clientId!, (admin, found) => admin.clients.setKeys(found, keys, io.context));
      const where = values['jwks-uri'] ? `the key set at ${values['jwks-uri']}` : `the ${(keys.jwks as { keys: unknown[] }).keys.length} key(s) of ${values['jwks-file']}`;
      return changed.length ? `${named(client)} now authenticates with assertions signed by ${where} (private_key_jwt); it has no secret` : `${named(client)} used ${where} already`;
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
      return table(['CLIENT_ID', 'NAME', 'REDIRECT_URI', 'CREATED', 'WEBHOOKS'], clients.map((c) => [c.clientId, c.clientName, c.redirectUri ?? '-', iso(c.createdAt)!, String(c.webhookCount)]));
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
        ['client_id', client.clientId], ['name', client.clientName], ['redirect_uri', client.redirectUri ?? 'none (client_credentials only)'],
        ['authenticates with', describedBy(client)?.token_endpoint_auth_method ?? 'client_secret_post'], ['grant types', (describedBy(client)?.grant_types ?? ['authorization_code', 'refresh_token']).join(', ')],
        ['created', iso(client.createdAt)!],
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
