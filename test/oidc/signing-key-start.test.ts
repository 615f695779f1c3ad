/**
 * Where the signing keys come from when the service starts (src/keys/key-seed.ts,
 * src/oidc/key-rotation.ts): JWKS_FILE seeds an empty key table, its first RS256 key signing and
 * the others published until they retire; a later JWKS_FILE that differs is reported, not used;
 * a JWKS_FILE the provider could not use, or a KEYS_ENCRYPTION_KEY other than the one the keys
 * were sealed with, stops start-up with an error naming the variable, and nothing is stored.
 */
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { calculateJwkThumbprint, createLocalJWKSet, jwtVerify } from 'jose';
import type { JWK } from 'jose';
import pg from 'pg';
import { ConfigError } from '../../src/config.js';
import { stateAt } from '../../src/keys/key-schedule.js';
import { createLogger } from '../../src/ops/logger.js';
import { startError } from '../helpers/app-start.js';
import { buildDist } from '../helpers/build.js';
import { createUser, obtainTokens, registerClient } from '../helpers/fixtures.js';
import { runNode } from '../helpers/run-node.js';
import { createTestDatabase, tempDataDir } from '../helpers/services.js';
import { expectPublicOnly, jwksOf, kidOf, kidsOf, SHORT_WINDOWS } from '../helpers/signing-keys.js';
import { startTestApp, UNLIMITED } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }) as JWK;
const ec = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }) as JWK;
const dir = tempDataDir('oauth-key-start');
afterAll(() => { fs.rmSync(dir, { recursive: true, force: true }); });
const jwksFile = (name: string, keys: unknown[]) => {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify({ keys }));
  return file;
};

describe('JWKS_FILE seeds the first start', () => {
  let t: TestApp;
  const fileRsa = rsa(); // no kid, alg or use: named as oidc-provider names it (RFC 7638 thumbprint)
  const fileEc = { ...ec(), kid: 'ec-1' };
  let rsaKid: string;
  const lines: string[] = [];
  beforeAll(async () => {
    rsaKid = await calculateJwkThumbprint(fileRsa);
    t = await startTestApp({ env: { ...SHORT_WINDOWS, JWKS_FILE: jwksFile('seed.json', [fileEc, fileRsa]) } });
  });
  afterAll(async () => { await t?.close(); });

  test('its first RS256 key is current; its other keys are published as retiring, for one retire window', async () => {
    const keys = await t.app.db.prisma.signingKey.findMany();
    const now = Date.now();
    const byKid = Object.fromEntries(keys.map((key) => [key.kid, key]));
    expect(Object.keys(byKid).sort()).toEqual(['ec-1', rsaKid].sort());
    expect([stateAt(byKid[rsaKid]!, now), stateAt(byKid['ec-1']!, now)]).toEqual(['current', 'retiring']);
    expect(byKid['ec-1']).toMatchObject({ alg: 'ES256', retiringAt: byKid[rsaKid]!.currentAt });
    expect(byKid['ec-1']!.retiredAt!.getTime() - byKid['ec-1']!.retiringAt!.getTime()).toBe(5000); // 4 s tokens + 1 s leeway

    const jwks = await jwksOf(t.baseUrl);
    expectPublicOnly(jwks);
    expect(jwks.keys).toEqual([
      { kty: 'RSA', n: fileRsa.n, e: fileRsa.e, kid: rsaKid, alg: 'RS256', use: 'sig' },
      { kty: 'EC', crv: 'P-256', x: fileEc.x, y: fileEc.y, kid: 'ec-1', alg: 'ES256', use: 'sig' },
    ]);
  });

  test('ID tokens are signed with it and verify against the JWKS', async () => {
    const client = await registerClient(t);
    const tokens = await obtainTokens(t, client, await createUser(t)) as { id_token?: string };
    expect(kidOf(tokens.id_token!)).toBe(rsaKid);
    await jwtVerify(tokens.id_token!, createLocalJWKSet(await jwksOf(t.baseUrl)), { issuer: t.baseUrl, audience: client.client_id });
  });

  test('restarted with a JWKS_FILE that holds other keys: the stored keys sign, and the log says the file is not used', async () => {
    const kids = kidsOf(await jwksOf(t.baseUrl));
    await t.close({ keepData: true });
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => { lines.push(line); } } });
    const other = { ...rsa(), kid: 'not-stored' };
    t = await startTestApp({ reuse: { ...t.env, JWKS_FILE: jwksFile('other.json', [other]) }, logger });
    expect(kidsOf(await jwksOf(t.baseUrl))).toEqual(kids);
    const warning = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => String(line.msg).startsWith('JWKS_FILE holds keys that are not in use'));
    expect(warning).toMatchObject({ level: 40, kids: ['not-stored'] });
  });
});

describe('a JWKS_FILE the provider could not use stops the first start, naming JWKS_FILE; nothing is stored', () => {
  const pub = (() => { const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...rest } = rsa(); return rest; })();
  test.each<[string, unknown[], RegExp]>([
    ['a key for encryption', [{ ...rsa(), use: 'enc' }], /keys\[0\] is for "enc", not for signing/],
    ['an algorithm the provider does not sign with', [{ ...rsa(), alg: 'RS384' }], /keys\[0\] cannot sign with RS384/],
    ['a curve the provider does not sign with', [rsa(), generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ format: 'jwk' })], /keys\[1\] cannot sign with the P-384 curve/],
    ['no RS256 key', [ec()], /holds no RS256 key, the algorithm ID tokens are signed with/],
    ['one kid twice', [{ ...rsa(), kid: 'same' }, { ...rsa(), kid: 'same' }], /kid "same" is used by more than one key/],
    ['a public key', [pub], /must hold \{"keys": \[\.\.\.\]\} with at least one private key/],
    ['damaged key material', [{ ...rsa(), n: 'AAAA' }], /keys\[0\] is not a usable private key/],
  ])('%s', async (name, keys, message) => {
    const database = await createTestDatabase({ migrated: true }); // the keys are checked after the migrations
    try {
      const dataDir = tempDataDir('oauth-key-start-bad');
      const error = await startError({ ...UNLIMITED, DATA_DIR: dataDir, DATABASE_URL: database.url, JWKS_FILE: jwksFile(`${name}.json`, keys) });
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe('JWKS_FILE');
      expect((error as Error).message).toMatch(message);
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      expect((await client.query<{ n: number }>('SELECT count(*)::int AS n FROM signing_keys')).rows[0]!.n).toBe(0);
      await client.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
    } finally {
      await database.drop();
    }
  });
});

describe('KEYS_ENCRYPTION_KEY must be the one the keys were sealed with', () => {
  let t: TestApp;
  beforeAll(async () => {
    await buildDist();
    t = await startTestApp();
  }, 120_000);
  afterAll(async () => { await t?.close(); });

  const launch = (env: Record<string, string>) => runNode('dist/launch.cjs', [], { ...UNLIMITED, NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.env.DATABASE_URL!, ...env }, 60_000);

  test.each([
    ['unset, with another DATA_DIR (a key generated there)', {}],
    ['set to another key', { KEYS_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64') }],
  ])('%s: the instance does not start, and says why in one line naming KEYS_ENCRYPTION_KEY', async (_, env) => {
    const dataDir = tempDataDir('oauth-key-start-other');
    try {
      const before = await t.app.db.prisma.signingKey.findMany();
      const run = await launch({ DATA_DIR: dataDir, ...env });
      expect(run.timedOut).toBe(false);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(/Could not start: KEYS_ENCRYPTION_KEY: signing key \S+ was sealed with another encryption key/);
      expect(run.stderr).not.toMatch(/^\s+at /m);
      expect(run.stdout).not.toMatch(/OAuth service at/);
      expect(await t.app.db.prisma.signingKey.findMany()).toEqual(before);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);

  test('set to the key the first instance generated, another DATA_DIR works: same keys, same JWKS', async () => {
    const key = fs.readFileSync(path.join(t.config.dataDir, 'keys-encryption-key'), 'utf8').trim();
    const other = await startTestApp({ reuse: { ...t.env, PORT: '0', DATA_DIR: tempDataDir('oauth-key-start-same'), KEYS_ENCRYPTION_KEY: key } });
    try {
      expect(await jwksOf(`http://localhost:${(other.server.address() as AddressInfo).port}`)).toEqual(await jwksOf(t.baseUrl));
    } finally {
      await other.close({ keepData: true });
      fs.rmSync(other.config.dataDir, { recursive: true, force: true });
    }
  });
});
