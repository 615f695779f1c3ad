/**
 * The administration CLI: against the machine's Postgres, and against an embedded DATA_DIR with
 * the server stopped. What only a process shows is run as operators run it (`node dist/cli.js`,
 * what `npm run user:create --` runs): which stream says what, exit statuses, a first start on
 * an empty DATA_DIR, the lock on DATA_DIR between processes; the rest in this process
 * (test/helpers/cli.ts: the same commands and exit codes).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createUserStore } from '../src/accounts/user-store.js';
import { openDatabase } from '../src/store/database.js';
import type { Database } from '../src/store/database.js';
import { buildDist } from './helpers/build.js';
import { EMBEDDED_TIMEOUT, expectCleanFailure, runCli, spawnCli } from './helpers/cli.js';
import type { NodeRun } from './helpers/run-node.js';
import { createTestDatabase, tempDataDir } from './helpers/services.js';
import type { TestDatabase } from './helpers/services.js';

const PASSWORD = 'correct horse battery staple';

function userArgs(overrides: Record<string, string | undefined> = {}): string[] {
  const options: Record<string, string | undefined> = {
    username: 'alice', password: PASSWORD, email: 'alice@example.com', 'full-name': 'Alice Example', ...overrides,
  };
  return ['user:create', ...Object.entries(options).flatMap(([name, value]) => (value === undefined ? [] : [`--${name}`, value]))];
}

async function withDatabase<T>(options: { databaseUrl: string | undefined; dataDir: string }, use: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(options);
  try {
    return await use(db);
  } finally {
    await db.close();
  }
}

beforeAll(async () => { await buildDist(); }, 120_000);

describe('against PostgreSQL (DATABASE_URL)', () => {
  let database: TestDatabase;
  let dataDir: string;
  let env: Record<string, string>;
  const cli = (args: string[]) => runCli(args, env);
  const spawned = (args: string[]) => spawnCli(args, env);

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = tempDataDir('oauth-cli-test');
    env = { DATABASE_URL: database.url, DATA_DIR: dataDir };
  });
  afterAll(async () => {
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('db:migrate on an empty database applies the migrations, then has nothing to do', async () => {
    const first = await cli(['db:migrate']);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/applied \d{14}_\w+|database is up to date/);
    const again = await cli(['db:migrate']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/database is up to date/);
    const rows = await withDatabase({ databaseUrl: database.url, dataDir }, (db) => db.prisma.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM "_prisma_migrations" WHERE finished_at IS NOT NULL`);
    expect(Number(rows[0]!.n)).toBeGreaterThan(0);
  });

  test('user:create creates a user who can then log in', async () => {
    const run = await cli(userArgs());
    expect(run.stderr).not.toMatch(/user:create:/);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/created user alice/);
    expect(run.stdout).not.toContain(PASSWORD);

    await withDatabase({ databaseUrl: database.url, dataDir }, async (db) => {
      const users = createUserStore(db.prisma);
      const user = await users.authenticate('alice', PASSWORD);
      expect(user).toMatchObject({ username: 'alice', email: 'alice@example.com', fullName: 'Alice Example' });
      expect(user!.passwordHash).not.toContain(PASSWORD);
      expect(await users.authenticate('alice', 'not the password')).toBeUndefined();
    });
  });

  test('a taken username (in any case) is refused with "already taken"', async () => {
    const again = await cli(userArgs({ email: 'other@example.com' }));
    expectCleanFailure(again, 'already taken');
    expectCleanFailure(await cli(userArgs({ username: 'ALICE' })), 'already taken');
    await withDatabase({ databaseUrl: database.url, dataDir }, async (db) => {
      expect(await db.prisma.user.count({ where: { username: 'alice' } })).toBe(1);
      // The original password still works: the duplicate changed nothing.
      expect(await createUserStore(db.prisma).authenticate('alice', PASSWORD)).toBeTruthy();
    });
  });

  test.each<[string, string[], string | RegExp]>([
    ['a missing --email', userArgs({ username: 'bob', email: undefined }), '--email'],
    ['missing --username and --full-name', userArgs({ username: undefined, 'full-name': undefined }), /--username.*--full-name/],
    ['an empty --password', userArgs({ username: 'bob', password: '' }), '--password'],
    ['a bad e-mail address', userArgs({ username: 'bob', email: 'not-an-email' }), /email/i],
    ['a short password', userArgs({ username: 'bob', password: 'short' }), /password must be \d+ to \d+ characters/],
    ['a bad username', userArgs({ username: 'bob smith' }), /username must be/],
    ['an unknown option', [...userArgs({ username: 'bob' }), '--admin', 'yes'], /--admin/],
    ['an option without its value', ['user:create', '--username'], /--username/],
    ['a stray positional argument (npm run without --)', ['user:create', 'bob', 'secret'], /bob|argument/i],
    ['a username shaped like a user id', userArgs({ username: '2f1c7c2e-0d4b-4f6e-9a51-3b8e8c1f2a77' }), 'username must not be shaped like a user id'],
    ['a repeated --username', [...userArgs({ username: 'bob' }), '--username', 'bob2'], '--username is given more than once'],
  ])('%s: non-zero exit with a clear message, no user', async (_, args, message) => {
    expectCleanFailure(await cli(args), message);
    await withDatabase({ databaseUrl: database.url, dataDir }, async (db) => {
      expect(await db.prisma.user.count({ where: { username: { in: ['bob', 'bob smith'] } } })).toBe(0);
    });
  });

  test('help lists the commands on stdout (exit 0); keys:generate into a missing folder is one line, no stack', async () => {
    const help = await cli(['help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/usage: node dist\/cli\.js <command>.*\n[\s\S]*tokens:revoke/);
    expectCleanFailure(await cli(['keys:generate', '--out', path.join(dataDir, 'no-such-folder', 'jwks.json')]), /ENOENT: no such file or directory/, 1);
  });

  test("stdout holds the command's result; stderr its errors and its audit lines, and nothing else", async () => {
    // But for the notice oidc-provider prints as it loads on Node 20 (docs/operations.md "Administration").
    const stderrLines = (run: NodeRun) => run.stderr.split('\n').filter((line) => line && !/^oidc-provider WARNING: Unsupported runtime\b/.test(line));
    // A change: its confirmation on stdout; on stderr only its audit line (JSON), gone at LOG_LEVEL=warn.
    const created = await spawned(userArgs({ username: 'dora', email: 'dora@example.com' }));
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^created user dora \([0-9a-f-]{36}\)\n$/);
    expect(stderrLines(created).map((line) => JSON.parse(line) as unknown)).toEqual([expect.objectContaining({ msg: 'audit', event: 'user.created' })]);
    const quiet = await spawnCli(['users:disable', 'dora'], { ...env, LOG_LEVEL: 'warn' });
    expect([quiet.code, stderrLines(quiet)]).toEqual([0, []]);
    expect(quiet.stdout).toMatch(/^disabled user dora /);
    // Nothing to do: said on stdout, as a result. A listing, as JSON: stdout alone.
    const again = await spawned(['users:disable', 'dora']);
    expect([again.code, stderrLines(again)]).toEqual([0, []]);
    expect(again.stdout).toMatch(/is already disabled/);
    const listed = await spawned(['users:list', '--json']);
    expect(JSON.parse(listed.stdout)).toContainEqual(expect.objectContaining({ username: 'dora' }));
    expect(stderrLines(listed)).toEqual([]);
    // A refusal: one line on stderr, nothing on stdout.
    const refused = await spawned(['users:show', 'nobody-at-all']);
    expect([refused.code, refused.stdout]).toEqual([1, '']);
    expect(stderrLines(refused)).toEqual([expect.stringMatching(/^users:show: no user "nobody-at-all"/)]);
  });

  test('an unknown command prints the usage and exits non-zero', async () => {
    const run = await cli(['user:delete']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/usage: .*user:create/);
  });

  test('a bad DATABASE_URL is a configuration error naming it', async () => {
    const run = await runCli(userArgs({ username: 'carol' }), { DATABASE_URL: 'mysql://x', DATA_DIR: dataDir });
    expectCleanFailure(run, 'DATABASE_URL');
  });
});

describe('against the embedded database (DATA_DIR, server stopped)', () => {
  let dataDir: string;
  let env: Record<string, string>;
  // The first start (an empty DATA_DIR) and the lock between processes in processes; the rest in this one.
  const spawned = (args: string[]) => spawnCli(args, env, { timeoutMs: EMBEDDED_TIMEOUT });
  const cli = (args: string[]) => runCli(args, env);

  beforeAll(() => {
    dataDir = tempDataDir('oauth-cli-test');
    env = { DATA_DIR: dataDir };
  });
  afterAll(() => { if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true }); });

  test('user:create creates a user who can then log in', async () => {
    const run = await spawned(userArgs());
    expect(run.stderr).not.toMatch(/user:create:/);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/created user alice/);
    // The CLI let go of the folder: the server (here, this process) can open it.
    await withDatabase({ databaseUrl: undefined, dataDir }, async (db) => {
      expect(db.embedded).toBe(true);
      expect(await createUserStore(db.prisma).authenticate('alice', PASSWORD)).toMatchObject({ email: 'alice@example.com', fullName: 'Alice Example' });
    });
  }, EMBEDDED_TIMEOUT);

  test('a taken username is refused with "already taken"', async () => {
    expectCleanFailure(await cli(userArgs({ email: 'other@example.com' })), 'already taken');
  }, EMBEDDED_TIMEOUT);

  test('db:migrate exits 0', async () => {
    const run = await cli(['db:migrate']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/database is up to date/);
  }, EMBEDDED_TIMEOUT);

  test('while another process holds the folder, it refuses and says the database is in use', async () => {
    const db = await openDatabase({ databaseUrl: undefined, dataDir }); // as the running server does
    let run: NodeRun;
    try {
      run = await spawned(userArgs({ username: 'dave' }));
    } finally {
      await db.close();
    }
    expectCleanFailure(run, /in use by process \d+/);
    expect(run.stderr).toContain(String(process.pid));

    // Nothing was written, and once the folder is free the same command works.
    const retry = await spawned(userArgs({ username: 'dave' }));
    expect(retry.code).toBe(0);
  }, EMBEDDED_TIMEOUT);
});
