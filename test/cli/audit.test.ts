/**
 * `audit:list`: who did what, newest first, from the operator's seat (DATABASE_URL): filtered by
 * user (username, or id, also of a deleted user), client, event names and time, limited; as a
 * table and as JSON; bad values refused plainly.
 */
import { beforeAll, describe, expect, test } from '@jest/globals';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { expectCleanFailure, expectSuccess, serviceWithCli } from '../helpers/cli.js';
import type { ServiceWithCli } from '../helpers/cli.js';
import { createUser, obtainTokens, registerClient } from '../helpers/fixtures.js';
import type { TestApp } from '../helpers/test-app.js';

type Entry = { id: string; time: string; event: string; actor: string; user_id: string | null; client_id: string | null; address: string | null; request_id: string | null; detail: Record<string, unknown> };

const service = serviceWithCli();
let t: TestApp;
let cli: ServiceWithCli['cli'];
let client: TestClient;
let alice: TestUser;
let aliceId: string;
beforeAll(async () => {
  ({ t, cli } = service);
  client = await registerClient(t, 'http://localhost:9999/callback', 'Audited App');
  alice = await createUser(t);
  aliceId = (await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: alice.username } })).id;
  await obtainTokens(t, client, alice);
  expectSuccess(await cli(['users:disable', alice.username]));
});

const list = async (...args: string[]) => JSON.parse(expectSuccess(await cli(['audit:list', ...args, '--json'])).stdout) as Entry[];

describe('audit:list', () => {
  test('by user, newest first: who did what, from where, in which request', async () => {
    const entries = await list('--user', alice.username);
    // Disabling ends the user's sessions too (enabling them again brings none back): its own rows,
    // the end of the instant and the end of what the sessions made (oidc/session-end.ts).
    expect(entries.map((entry) => entry.event)).toEqual(['session.ended', 'user.signed_out', 'user.disabled', 'token.revoked', 'token.issued', 'consent.granted', 'login.succeeded']);
    expect(entries[0]).toMatchObject({ event: 'session.ended', actor: 'operator', user_id: aliceId, detail: { reason: 'disabled' } });
    expect(entries[1]).toMatchObject({ event: 'user.signed_out', actor: 'operator', detail: { username: alice.username, reason: 'disabled' } });
    expect(entries[2]).toEqual({
      id: expect.stringMatching(/^\d+$/), time: expect.any(String), event: 'user.disabled', actor: 'operator', user_id: aliceId, client_id: null,
      address: null, request_id: expect.stringMatching(/^cli-/), detail: { username: alice.username, grants_revoked: 1, os_user: expect.any(String) },
    });
    expect(entries[5]).toMatchObject({ actor: `user:${aliceId}`, client_id: client.client_id, address: '127.0.0.1', request_id: expect.any(String) });
    expect(Date.parse(entries[2]!.time)).toBeGreaterThanOrEqual(Date.parse(entries[5]!.time));
    expect(await list('--user', aliceId)).toEqual(entries);

    const table = expectSuccess(await cli(['audit:list', '--user', alice.username])).stdout;
    expect(table.split('\n')[0]).toMatch(/^TIME\s+EVENT\s+ACTOR\s+USER\s+CLIENT\s+ADDRESS\s+REQUEST_ID\s+DETAIL$/);
    expect(table).toMatch(new RegExp(`^\\S+\\s+user\\.disabled\\s+operator\\s+${aliceId}\\s+-\\s+-\\s+cli-\\S+\\s+\\{`, 'm'));
  });

  test('a deleted user\'s rows are still there, found by id', async () => {
    const bob = await createUser(t);
    const bobId = (await t.app.db.prisma.user.findUniqueOrThrow({ where: { username: bob.username } })).id;
    expectSuccess(await cli(['users:delete', bob.username]));
    expect((await list('--user', bobId)).map((entry) => entry.event)).toEqual(['user.deleted']);
    expectCleanFailure(await cli(['audit:list', '--user', bob.username]), `no user "${bob.username}"`, 1);
  });

  test('by client, by event names (repeatable), since a time or an age, with a limit', async () => {
    const byClient = await list('--client', client.client_id);
    expect(byClient.every((entry) => entry.client_id === client.client_id)).toBe(true);
    expect(byClient.at(-1)).toMatchObject({ event: 'client.registered', actor: 'anonymous' });
    const logins = await list('--event', 'login.succeeded', '--event', 'consent.granted', '--user', aliceId);
    expect(logins.map((entry) => entry.event)).toEqual(['consent.granted', 'login.succeeded']);
    const all = await list('--since', '1h');
    expect(all.length).toBeGreaterThanOrEqual(6);
    expect(await list('--since', '2999-01-01')).toEqual([]);
    const [disabled, revoked] = await list('--user', aliceId);
    expect((await list('--user', aliceId, '--since', revoked!.time)).map((entry) => entry.event)).toEqual([disabled!.event, revoked!.event]);
    expect(await list('--limit', '2')).toEqual(all.slice(0, 2));
    expect(expectSuccess(await cli(['audit:list', '--limit', '1'])).stdout).toMatch(/\(the newest 1; --limit shows more\)\n$/);
    expect(expectSuccess(await cli(['audit:list', '--event', 'client.deleted'])).stdout).toBe('no audit events\n');
  });

  test.each<[string, string[], string | RegExp, number]>([
    ['an unknown event', ['--event', 'user.hacked'], /unknown event "user.hacked"; known: login.succeeded, /, 1],
    ['a --since that is no time', ['--since', 'yesterday'], /--since must be a time .* or an age/, 1],
    ['a local time without its offset', ['--since', '2026-11-20T08:00'], /--since must be a time/, 1],
    ['a day that is not in the calendar', ['--since', '2026-02-30'], /--since must be a time/, 1],
    ['an age before 1970', ['--since', '999999d'], /--since must be a time .* from 1970 on/, 1],
    ['an empty --user', ['--user', ''], '--user needs a value, and was given an empty one', 2],
    ['a repeated --since', ['--since', '1h', '--since', '2h'], '--since is given more than once', 2],
    ['a --limit out of range', ['--limit', '0'], '--limit must be a whole number from 1 to 10000', 1],
    ['an unknown option', ['--users', 'alice'], /Unknown option '--users'/, 2],
  ])('%s: a clear message, the exit code, no stack', async (_, args, message, code) => {
    expectCleanFailure(await cli(['audit:list', ...args]), message, code);
  });
});
