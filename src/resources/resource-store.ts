/**
 * The resource servers an operator declared: in the RESOURCES variable (read-only here) and with
 * resources:add (the `resource_servers` table). A resource is found by its URI with or without
 * one trailing slash. Each addition and removal is audited (`resource.added`,
 * `resource.removed`) in its transaction.
 *
 * Read on every request that names a `resource` (one indexed point select, once per request;
 * nothing is cached between requests, so a removal holds from the next request on).
 *
 * @example const resource = await resources.find('https://mcp.example.com/');
 */
import type { AuditContext } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../audit/records.js';
import type { PrismaClient, ResourceServer } from '../generated/prisma/client.js';
import { matchKey, resourceDeclaration, ResourceInputError, resourceUriProblem } from './resource-declaration.js';
import type { ResourceDeclaration } from './resource-declaration.js';
import { memoised } from '../store/request-state.js';

export interface Resource extends ResourceDeclaration {
  /** Where it is declared: the RESOURCES variable, or resources:add. */
  readonly source: 'configuration' | 'database';
  readonly createdAt: Date | undefined;
}

export interface ResourceStore {
  /** The declared resource that `indicator` names (with or without one trailing slash). */
  find(indicator: string): Promise<Resource | undefined>;
  /** Every declared resource, configuration's first, then by URI. */
  list(): Promise<Resource[]>;
  /** Validates and stores a resource; refused when one with this URI (or its other spelling) exists. */
  add(input: { uri: string; scopes: string; name?: string | undefined; accessTokenTtl?: number | undefined }, context: AuditContext): Promise<Resource>;
  /** Removes a stored resource; undefined when none has this URI. Refused for one of RESOURCES. */
  remove(uri: string, context: AuditContext): Promise<Resource | undefined>;
}

const fromRow = (row: ResourceServer): Resource => ({
  uri: row.uri, name: row.name, scopes: row.scopes, accessTokenTtl: row.accessTokenTtl, source: 'database', createdAt: row.createdAt,
});

export function createResourceStore({ prisma, configured, changes }: { prisma: PrismaClient; configured: readonly ResourceDeclaration[]; changes: ChangeTransaction }): ResourceStore {
  const fromConfiguration = new Map(configured.map((declared): [string, Resource] => [matchKey(declared.uri), { ...declared, source: 'configuration', createdAt: undefined }]));
  // The unique index on regexp_replace(uri, '/$', '') serves this lookup (migration 20261127210000).
  // Once per request: an authorization request's glue and the provider both ask (store/request-state.ts).
  const stored = (key: string) => memoised((state) => state.resourceServers, key, async () => (await prisma.$queryRaw<ResourceServer[]>`
    SELECT uri, name, scopes, access_token_ttl AS "accessTokenTtl", created_at AS "createdAt"
    FROM resource_servers WHERE regexp_replace(uri, '/$', '') = ${key}`)[0]);

  return {
    async find(indicator) {
      // What no declaration can be names none, and never reaches the database (a NUL, say, which PostgreSQL refuses).
      if (resourceUriProblem(indicator)) return undefined;
      const key = matchKey(indicator);
      const configuredOne = fromConfiguration.get(key);
      if (configuredOne) return configuredOne;
      const row = await stored(key);
      return row ? fromRow(row) : undefined;
    },
    async list() {
      const rows = await prisma.resourceServer.findMany({ orderBy: { uri: 'asc' } });
      return [...fromConfiguration.values(), ...rows.map(fromRow)];
    },
    async add(input, context) {
      const declared = resourceDeclaration(input);
      const key = matchKey(declared.uri);
      if (fromConfiguration.has(key)) throw new ResourceInputError(`${declared.uri} is declared in RESOURCES already`);
      return changes(async (tx, record) => {
        const existing = await tx.$queryRaw<{ uri: string }[]>`SELECT uri FROM resource_servers WHERE regexp_replace(uri, '/$', '') = ${key}`;
        if (existing[0]) throw new ResourceInputError(`${existing[0].uri} is declared already (resources:remove it first to change it)`);
        const row = await tx.resourceServer.create({ data: { uri: declared.uri, name: declared.name, scopes: [...declared.scopes], accessTokenTtl: declared.accessTokenTtl } })
          .catch((error: unknown) => {
            // Another resources:add of the same resource got there first (the unique indexes).
            if ((error as { code?: unknown }).code === 'P2002') throw new ResourceInputError(`${declared.uri} is declared already`);
            throw error;
          });
        await record.audit('resource.added', { detail: { uri: row.uri, name: row.name, scopes: row.scopes, access_token_ttl: row.accessTokenTtl } }, context);
        return fromRow(row);
      });
    },
    async remove(uri, context) {
      const key = matchKey(uri);
      if (fromConfiguration.has(key)) throw new ResourceInputError(`${fromConfiguration.get(key)!.uri} is declared in the RESOURCES variable: remove it there`);
      return changes(async (tx, record) => {
        const [row] = await tx.$queryRaw<ResourceServer[]>`
          DELETE FROM resource_servers WHERE regexp_replace(uri, '/$', '') = ${key}
          RETURNING uri, name, scopes, access_token_ttl AS "accessTokenTtl", created_at AS "createdAt"`;
        if (!row) return undefined;
        await record.audit('resource.removed', { detail: { uri: row.uri, name: row.name } }, context);
        return fromRow(row);
      });
    },
  };
}
