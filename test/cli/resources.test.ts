/**
 * `resources:*` as operators run them (DATABASE_URL) while the service runs: a resource is added
 * with its scopes, name and token lifetime, listed (as a table and as JSON, those of the
 * RESOURCES variable first), matched with or without one trailing slash, removed; bad values
 * are refused plainly; each change is audited as the operator.
 */
import { describe, expect, test } from '@jest/globals';
import { expectCleanFailure, expectSuccess, runCli, serviceWithCli } from '../helpers/cli.js';

const CONFIGURED = { uri: 'https://configured.example/api', scopes: 'api:read', name: 'Configured API' };
const RESOURCES = JSON.stringify([CONFIGURED]);
const service = serviceWithCli({ RESOURCES });
// The CLI reads the service's configuration, RESOURCES included, as operators run it beside the service.
const cli = (args: string[]) => runCli(args, { DATABASE_URL: service.t.env.DATABASE_URL!, DATA_DIR: service.t.env.DATA_DIR!, RESOURCES });

const operatorRows = () => service.t.app.db.prisma.auditEvent.findMany({ where: { event: { startsWith: 'resource.' } }, orderBy: { id: 'asc' } });

describe('resources:*', () => {
  test('add, list (table and JSON), remove by the other spelling; audited as the operator', async () => {
    const added = expectSuccess(await cli(['resources:add', 'http://localhost:3001/mcp', '--scopes', 'tools:read tools:call', '--name', 'Example tools', '--access-token-ttl', '300']));
    expect(added.stdout).toBe('declared resource http://localhost:3001/mcp ("Example tools"): scopes tools:read tools:call; its access tokens live 300 s\n');
    const json = JSON.parse(expectSuccess(await cli(['resources:add', 'https://api.example.com/', '--scopes', 'api:read', '--json'])).stdout) as Record<string, unknown>;
    expect(json).toEqual({
      uri: 'https://api.example.com/', name: 'https://api.example.com/', scopes: ['api:read'], access_token_ttl: 600, source: 'database', created_at: expect.any(String),
    });

    const listed = JSON.parse(expectSuccess(await cli(['resources:list', '--json'])).stdout) as { uri: string; source: string }[];
    expect(listed.map((r) => [r.uri, r.source])).toEqual([
      ['https://configured.example/api', 'configuration'], ['http://localhost:3001/mcp', 'database'], ['https://api.example.com/', 'database'],
    ]);
    const table = expectSuccess(await cli(['resources:list'])).stdout;
    expect(table.split('\n')[0]).toMatch(/^URI\s+NAME\s+SCOPES\s+TOKEN_TTL\s+SOURCE$/);
    expect(table).toMatch(/^http:\/\/localhost:3001\/mcp\s+Example tools\s+tools:read tools:call\s+300s\s+database$/m);

    expect(expectSuccess(await cli(['resources:remove', 'https://api.example.com'])).stdout).toBe('removed resource https://api.example.com/ ("https://api.example.com/")\n');
    expect((await operatorRows()).map((row) => [row.event, row.actor, (row.detail as { uri: string }).uri])).toEqual([
      ['resource.added', 'operator', 'http://localhost:3001/mcp'],
      ['resource.added', 'operator', 'https://api.example.com/'],
      ['resource.removed', 'operator', 'https://api.example.com/'],
    ]);
  });

  test('refusals: exit 1 with one line; a wrong command line exit 2', async () => {
    expectCleanFailure(await cli(['resources:add', 'http://localhost:3001/mcp/', '--scopes', 'x']), 'http://localhost:3001/mcp is declared already', 1);
    expectCleanFailure(await cli(['resources:add', 'https://configured.example/api/', '--scopes', 'x']), 'declared in RESOURCES already', 1);
    expectCleanFailure(await cli(['resources:add', 'https://a.example/#top', '--scopes', 'x']), 'must not contain a fragment', 1);
    expectCleanFailure(await cli(['resources:add', 'ftp://a.example/', '--scopes', 'x']), 'must use https', 1);
    expectCleanFailure(await cli(['resources:add', 'https://a.example/', '--scopes', 'openid']), "is the profile's scope", 1);
    expectCleanFailure(await cli(['resources:add', 'https://a.example/', '--scopes', 'x', '--access-token-ttl', '10m']), 'whole number of seconds', 1);
    expectCleanFailure(await cli(['resources:add', 'https://a.example/', '--scopes', 'x', '--access-token-ttl', '0']), 'from 1 to 86400', 1);
    expectCleanFailure(await cli(['resources:add', 'https://a.example/']), '--scopes is required', 1);
    expectCleanFailure(await cli(['resources:remove', 'https://nothing.example/']), 'no resource "https://nothing.example/"', 1);
    expectCleanFailure(await cli(['resources:remove', 'https://configured.example/api']), 'declared in the RESOURCES variable: remove it there', 1);
    expectCleanFailure(await cli(['resources:add']), 'missing <uri>', 2);
    expectCleanFailure(await cli(['resources:list', 'extra']), 'unexpected argument', 2);
    expect((await operatorRows()).filter((row) => row.event === 'resource.added')).toHaveLength(2); // the first test's, nothing more
  });
});
