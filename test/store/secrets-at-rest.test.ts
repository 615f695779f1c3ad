/**
 * Secrets at rest: neither a client secret nor a user's password is stored anywhere, in any
 * encoding a request carried it in. Users hold argon2id hashes; clients a SHA-256 digest; the
 * signing keys' private parts are sealed with KEYS_ENCRYPTION_KEY.
 *
 * @see RFC 6819 §5.1.4.1.3 (no cleartext storage of credentials)
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import argon2 from 'argon2';
import { Redis } from 'ioredis';
import { Browser } from '../helpers/browser.js';
import { createUser, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { keyEncryption } from '../../src/keys/key-encryption.js';
import { REDIS_URL } from '../helpers/services.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

/** Every row of every table in the public schema, one text line per row. */
async function dumpDatabase(t: TestApp): Promise<Map<string, string[]>> {
  return t.app.db.withConnection(async (sql) => {
    const { rows: tables } = await sql.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    );
    const dump = new Map<string, string[]>();
    for (const { table_name: table } of tables) {
      const { rows } = await sql.query<{ row: string }>(`SELECT t::text AS row FROM "${table.replaceAll('"', '""')}" t`);
      dump.set(table, rows.map((r) => r.row));
    }
    return dump;
  });
}

/** Every key under the app's Redis prefix with its value, whatever the type. */
async function dumpRedis(prefix: string): Promise<string[]> {
  const redis = new Redis(REDIS_URL);
  try {
    const lines: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      for (const key of keys) {
        const type = await redis.type(key);
        const value = type === 'string' ? await redis.get(key)
          : type === 'hash' ? await redis.hgetall(key)
            : type === 'list' ? await redis.lrange(key, 0, -1)
              : type === 'set' ? await redis.smembers(key)
                : type === 'zset' ? await redis.zrange(key, '0', '-1', 'WITHSCORES')
                  : `<${type}>`;
        lines.push(`${key} ${JSON.stringify(value)}`);
      }
      cursor = next;
    } while (cursor !== '0');
    return lines;
  } finally {
    redis.disconnect();
  }
}

/** The forms a secret travels in: as typed, URL/form-encoded, and inside HTTP Basic. */
function encodings(secret: string, clientId?: string): string[] {
  const forms = [secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)];
  if (clientId) forms.push(Buffer.from(`${clientId}:${secret}`).toString('base64'));
  return [...new Set(forms)];
}

describe('secrets at rest (Postgres and Redis)', () => {
  let t: TestApp;
  let password: string;
  let clientSecret: string;
  let clientId: string;
  let username: string;
  let database: Map<string, string[]>;
  let redis: string[];

  beforeAll(async () => {
    t = await startTestApp({ mode: 'postgres' });
    // Characters that URL-encoding changes, so an encoded copy would not hide from the search.
    password = `pw ${randomBytes(9).toString('base64url')}&+/=é`;
    const user = await createUser(t, { password });
    username = user.username;
    const client = await registerClient(t);
    clientId = client.client_id;
    clientSecret = client.client_secret;

    // Walk the whole flow so that sessions, interactions, grants, codes and tokens exist too.
    const redirect = await new Browser(t.baseUrl).authorize(client, user);
    const token = await tokenRequest(t, { code: redirect.searchParams.get('code')!, client_id: clientId, client_secret: clientSecret });
    expect(token.status).toBe(200);

    database = await dumpDatabase(t);
    redis = await dumpRedis(t.config.redisKeyPrefix);
  });
  afterAll(async () => { await t?.close(); });

  test('the dumps hold the data the flow created (so the searches below mean something)', () => {
    expect(database.get('users')!.join('\n')).toContain(username);
    expect(database.get('clients')!.join('\n')).toContain(clientId);
    expect(database.get('oidc_models')!.join('\n')).toMatch(/AccessToken/);
    expect(redis.join('\n')).toMatch(/Session/);
  });

  test('the client secret appears in no table row and no Redis key or value', () => {
    const everything = [...[...database.values()].flat(), ...redis].join('\n');
    for (const form of encodings(clientSecret, clientId)) expect(everything).not.toContain(form);
  });

  test("the user's password appears in no table row and no Redis key or value", () => {
    const everything = [...[...database.values()].flat(), ...redis].join('\n');
    for (const form of encodings(password)) expect(everything).not.toContain(form);
  });

  test('users holds an argon2id hash of the password', async () => {
    const user = await t.app.db.prisma.user.findUniqueOrThrow({ where: { username } });
    expect(user.passwordHash).toMatch(/^\$argon2id\$v=19\$[mtp]=\d+(,[mtp]=\d+){2}\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
    expect(await argon2.verify(user.passwordHash, password)).toBe(true);
    expect(database.get('users')!.find((row) => row.includes(username))).toContain(user.passwordHash);
  });

  test("the signing key's private parts appear in no table row and no Redis key or value (signing_keys holds them sealed)", async () => {
    const keys = await t.app.db.prisma.signingKey.findMany();
    expect(keys).toHaveLength(1);
    const jwk = keyEncryption(t.config).open(keys[0]!.kid, keys[0]!.privateJwk!);
    const everything = [...[...database.values()].flat(), ...redis].join('\n');
    for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi'] as const) {
      const value = String(jwk[member]);
      for (const form of [value, Buffer.from(value, 'base64url').toString('base64'), Buffer.from(value, 'base64url').toString('hex')]) expect(everything).not.toContain(form);
    }
  });

  test('clients holds a 64-hex-digit digest of the secret', async () => {
    const client = await t.app.db.prisma.client.findUniqueOrThrow({ where: { clientId } });
    expect(client.clientSecretHash).toMatch(/^[0-9a-f]{64}$/);
  });
});
