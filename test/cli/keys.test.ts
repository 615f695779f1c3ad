/**
 * `keys:list`, `keys:rotate` and `keys:generate` from the operator's seat (DATABASE_URL, the
 * service running): the states and their dates, as a table and as JSON; a rotation the running
 * service publishes at once; bad input refused with the CLI's exit codes and nothing changed; the
 * table never holding a private key in the clear.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { keyEncryption } from '../../src/keys/key-encryption.js';
import { expectCleanFailure, expectSuccess, runCli } from '../helpers/cli.js';
import { createTestDatabase, tempDataDir } from '../helpers/services.js';
import type { TestDatabase } from '../helpers/services.js';
import { jwksOf, kidsOf, listKeys, POLL_MS, PRIVATE_MEMBERS, rotate, SHORT_WINDOWS } from '../helpers/signing-keys.js';
import type { ListedKey } from '../helpers/signing-keys.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

let t: TestApp;
let cli: (args: string[], env?: Record<string, string>) => ReturnType<typeof runCli>;
beforeAll(async () => {
  t = await startTestApp({ env: SHORT_WINDOWS });
  cli = (args, env = {}) => runCli(args, { DATABASE_URL: t.env.DATABASE_URL!, DATA_DIR: t.env.DATA_DIR!, ...SHORT_WINDOWS, ...env });
}, 120_000);
afterAll(async () => { await t?.close(); });

const rotations = () => t.app.db.prisma.auditEvent.count({ where: { event: 'key.rotated' } });
/** The key table as it is (read directly: each CLI run takes seconds to start here). */
const table = () => t.app.db.prisma.signingKey.findMany({ orderBy: { kid: 'asc' } });

describe('keys:list', () => {
  test('the first start stored one key, current since then: as JSON and as a table', async () => {
    const [key, ...others] = await listKeys(cli);
    expect(others).toEqual([]);
    expect(key).toEqual({
      kid: expect.any(String), alg: 'RS256', state: 'current', created_at: expect.any(String), current_at: expect.any(String), retiring_at: null, retired_at: null,
    });
    expect(kidsOf(await jwksOf(t.baseUrl))).toEqual([key!.kid]);
    const table = expectSuccess(await cli(['keys:list'])).stdout.trimEnd().split('\n');
    expect(table[0]).toMatch(/^KID\s+ALG\s+STATE\s+CREATED\s+CURRENT_AT\s+RETIRING_AT\s+RETIRED_AT$/);
    expect(table[1]).toMatch(new RegExp(`^${key!.kid}\\s+RS256\\s+current\\s+${key!.created_at}\\s+${key!.current_at}\\s+-\\s+-$`));
  });
});

describe('keys:rotate: bad input changes nothing', () => {
  test.each<[string, number, string[], string | RegExp]>([
    ['not a duration', 1, ['--publish-ahead', 'soon'], '--publish-ahead must be a duration such as 90s, 30m, 1h or 7d (at most 30d), got "soon"'],
    ['a unit it does not know', 1, ['--publish-ahead', '2w'], /--publish-ahead must be a duration/],
    ['a negative duration', 1, ['--publish-ahead=-1h'], /--publish-ahead must be a duration/],
    ['shorter than two reads of every instance', 1, ['--publish-ahead', '0s'], /--publish-ahead must be at least 1s \(twice KEYS_POLL_INTERVAL_MS, so that every instance publishes the key before any signs with it\), got 0s/],
    ['longer than 30 days', 1, ['--publish-ahead', '31d'], '--publish-ahead must be a duration such as 90s, 30m, 1h or 7d (at most 30d), got "31d"'],
    ['a number without its unit', 1, ['--publish-ahead', '3600'], /--publish-ahead must be a duration/],
    ['no value', 2, ['--publish-ahead'], '--publish-ahead needs a value'],
    ['an empty value', 2, ['--publish-ahead='], '--publish-ahead needs a value, and was given an empty one'],
    ['an unknown option', 2, ['--grace', '1h'], "Unknown option '--grace'"],
    ['a stray argument', 2, ['now'], 'unexpected argument "now"'],
  ])('%s: exit %i', async (_, code, args, message) => {
    const before = await table();
    expectCleanFailure(await cli(['keys:rotate', ...args]), message, code);
    expect(await table()).toEqual(before);
    expect(await rotations()).toBe(0);
  });

  test('a wrong KEYS_ENCRYPTION_KEY: refused naming it, before anything is written', async () => {
    const before = await table();
    const run = await cli(['keys:rotate', '--publish-ahead', '1m'], { KEYS_ENCRYPTION_KEY: 'ab'.repeat(32) });
    expectCleanFailure(run, /^keys:rotate: KEYS_ENCRYPTION_KEY: signing key \S+ was sealed with another encryption key/m, 1);
    expect(run.stderr).not.toContain('ab'.repeat(32));
    expect(await table()).toEqual(before);
  });

  test('no KEYS_ENCRYPTION_KEY and a DATA_DIR without the generated one: refused naming it', async () => {
    const dataDir = tempDataDir('oauth-keys-cli');
    try {
      expectCleanFailure(await cli(['keys:rotate'], { DATA_DIR: dataDir }), /KEYS_ENCRYPTION_KEY: is not set, and \S+keys-encryption-key cannot be read \(ENOENT\): set it to the service's key/, 1);
      expect(fs.readdirSync(dataDir)).toEqual([]); // the CLI generated nothing
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('a database the service never started on has no key to replace', async () => {
    const database: TestDatabase = await createTestDatabase();
    try {
      const env = { DATABASE_URL: database.url, KEYS_ENCRYPTION_KEY: 'ef'.repeat(32) };
      expect(expectSuccess(await cli(['keys:list'], env)).stdout).toBe('no signing keys yet: the service stores the first when it starts\n');
      expectCleanFailure(await cli(['keys:rotate', '--publish-ahead', '1m'], env), 'keys:rotate: there is no signing key to replace yet: start the service once, it stores the first one', 1);
      expect(JSON.parse(expectSuccess(await cli(['keys:list', '--json'], env)).stdout)).toEqual([]);
    } finally {
      await database.drop();
    }
  });
});

describe('keys:rotate', () => {
  let first: ListedKey;
  test('publishes a new key at once; it signs after the publish-ahead (1h unless given); the old one retires after its tokens', async () => {
    [first] = await listKeys(cli) as [ListedKey];
    const started = Date.now();
    const rotation = await rotate(cli, '1h');
    expect(rotation).toEqual({
      kid: expect.any(String), alg: 'RS256', state: 'next', current_at: expect.any(String),
      replaces: { kid: first.kid, retiring_at: rotation.current_at, retired_at: expect.any(String) },
    });
    expect(Date.parse(rotation.current_at) - started).toBeGreaterThan(3600_000 - 60_000);
    expect(Date.parse(rotation.current_at) - started).toBeLessThan(3600_000 + 60_000);
    // ID and access tokens live 4 s here, and KEYS_RETIRE_LEEWAY is 1 s.
    expect(Date.parse(rotation.replaces.retired_at) - Date.parse(rotation.current_at)).toBe(5000);

    const listed = await listKeys(cli);
    expect(listed.map((key) => [key.kid, key.state])).toEqual([[rotation.kid, 'next'], [first.kid, 'current']]);
    expect(listed[1]).toMatchObject({ retiring_at: rotation.current_at, retired_at: rotation.replaces.retired_at });

    const deadline = Date.now() + 10 * POLL_MS;
    while (kidsOf(await jwksOf(t.baseUrl)).length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(kidsOf(await jwksOf(t.baseUrl))).toEqual([first.kid, rotation.kid].sort());

    const [row] = await t.app.db.prisma.auditEvent.findMany({ where: { event: 'key.rotated' } });
    expect(row).toMatchObject({ actor: 'operator', requestId: expect.stringMatching(/^cli-/), detail: expect.objectContaining({ kid: rotation.kid, replaces: first.kid, os_user: expect.any(String) }) });
  });

  test('a second rotation while one is under way is refused, and changes nothing', async () => {
    const before = await table();
    expectCleanFailure(await cli(['keys:rotate']), /^keys:rotate: a rotation is under way: key \S+ becomes current at \S+; rotate again after that/m, 1);
    expect(await table()).toEqual(before);
    expect(await rotations()).toBe(1);
  });

  test('--help shows the usage; help lists the key verbs', async () => {
    const help = expectSuccess(await cli(['keys:rotate', '--help'])).stdout;
    expect(help).toMatch(/^usage: node dist\/cli\.js keys:rotate \[--publish-ahead <duration>\] \[--json\]/);
    expect(expectSuccess(await cli(['help'])).stdout).toMatch(/keys:list[\s\S]*keys:rotate/);
  });

  test('the table holds the private parts sealed only: no private member in the clear, each opens to its public key', async () => {
    const rows = await t.app.db.withConnection((sql) => sql.query<{ kid: string; public_jwk: Record<string, unknown>; private_jwk: string; row: string }>(
      'SELECT kid, public_jwk, private_jwk, t::text AS row FROM signing_keys t',
    ));
    expect(rows.rows).toHaveLength(2);
    const seal = keyEncryption(t.config);
    for (const { kid, public_jwk: publicJwk, private_jwk: sealed, row } of rows.rows) {
      expect(Object.keys(publicJwk).filter((name) => PRIVATE_MEMBERS.includes(name))).toEqual([]);
      expect(sealed).toMatch(/^v1\.[0-9a-f]{16}\.[\w-]+\.[\w-]+\.[\w-]+$/);
      const opened = seal.open(kid, sealed);
      expect(opened.n).toBe(publicJwk.n);
      for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi'] as const) {
        expect(typeof opened[member]).toBe('string');
        expect(row).not.toContain(String(opened[member]));
      }
    }
  });
});

describe('keys:generate', () => {
  test('writes a private JWKS for JWKS_FILE (mode 0600) and prints a cookie key; never over an existing file', async () => {
    const dir = tempDataDir('oauth-keys-generate');
    try {
      const out = path.join(dir, 'jwks.json');
      const run = expectSuccess(await cli(['keys:generate', '--out', out]));
      expect(run.stdout).toMatch(/^wrote a private JWKS to .*jwks\.json \(set JWKS_FILE to it\)\nCOOKIE_KEYS=[\w-]{43}\n$/);
      expect(fs.statSync(out).mode & 0o777).toBe(0o600);
      const { keys } = JSON.parse(fs.readFileSync(out, 'utf8')) as { keys: Record<string, string>[] };
      expect(keys).toEqual([expect.objectContaining({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String), d: expect.any(String) })]);
      expectCleanFailure(await cli(['keys:generate', '--out', out]), /EEXIST/, 1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
