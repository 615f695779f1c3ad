/**
 * `resources:*`: the resource servers whose `resource` (RFC 8707) gets an audience-bound JWT
 * access token (docs/mcp.md). A resource is named by its URI, with or without one trailing slash.
 *
 * @example node dist/cli.js resources:add http://localhost:3001/mcp --scopes "tools:read tools:call" --name "Example tools"
 */
import { NotFoundError } from '../admin/not-found.js';
import type { Resource } from '../resources/resource-store.js';
import { withAdmin } from './admin.js';
import { ArgumentError, onlyArgument, parse } from './args.js';
import { iso, json, table } from './output.js';
import type { VerbTable } from './verb.js';

const resourceJson = (resource: Resource) => ({
  uri: resource.uri, name: resource.name, scopes: resource.scopes, access_token_ttl: resource.accessTokenTtl, source: resource.source, created_at: iso(resource.createdAt ?? null),
});

function ttlOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new ArgumentError(`--access-token-ttl must be a whole number of seconds, got "${value}"`);
  return Number(value);
}

export const RESOURCE_VERBS: VerbTable = {
  'resources:add': {
    usage: '<uri> --scopes "<scope> …" [--name <name>] [--access-token-ttl <seconds>] [--json]',
    summary: 'declare a resource server: a `resource` naming it gets a JWT access token for it (aud = its URI)',
    async run(args, io) {
      const { values, positionals: [uri] } = parse(args, ['uri'], {
        scopes: { type: 'string' }, name: { type: 'string' }, 'access-token-ttl': { type: 'string' }, json: { type: 'boolean' },
      });
      if (values.scopes === undefined) throw new ArgumentError('--scopes is required: the scopes a token for this resource may carry, space-separated');
      const added = await withAdmin(io, (admin) => admin.resources.add({ uri: uri!, scopes: values.scopes!, name: values.name, accessTokenTtl: ttlOf(values['access-token-ttl']) }, io.context));
      if (values.json) return json(resourceJson(added));
      return `declared resource ${added.uri} ("${added.name}"): scopes ${added.scopes.join(' ')}; its access tokens live ${added.accessTokenTtl} s`;
    },
  },
  'resources:list': {
    usage: '[--json]',
    summary: 'every declared resource server (RESOURCES first, then resources:add ones)',
    async run(args, io) {
      const { values } = parse(args, [], { json: { type: 'boolean' } });
      const resources = await withAdmin(io, (admin) => admin.resources.list());
      if (values.json) return json(resources.map(resourceJson));
      if (resources.length === 0) return 'no resources';
      return table(['URI', 'NAME', 'SCOPES', 'TOKEN_TTL', 'SOURCE'], resources.map((r) => [r.uri, r.name, r.scopes.join(' '), `${r.accessTokenTtl}s`, r.source]));
    },
  },
  'resources:remove': {
    usage: '<uri>',
    summary: 'remove a declared resource server: no new token for it (JWTs already issued stay valid until they expire)',
    async run(args, io) {
      const uri = onlyArgument(args, 'uri');
      const removed = await withAdmin(io, (admin) => admin.resources.remove(uri, io.context));
      if (!removed) throw new NotFoundError(`no resource "${uri}" (resources:list shows them)`);
      return `removed resource ${removed.uri} ("${removed.name}")`;
    },
  },
};
