/**
 * Signing keys on the embedded database (no DATABASE_URL): a DATA_DIR set up by an earlier
 * version keeps its key (DATA_DIR/keys.json's "jwks" seeds the table, so tokens it signed still
 * verify), the service stopped, `keys:rotate` schedules a new key on DATA_DIR, and the service
 * started again publishes it at once and signs with it from the stored time.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { TestClient, TestUser } from '../helpers/browser.js';
import { EMBEDDED_TIMEOUT, expectSuccess, runCli } from '../helpers/cli.js';
import { createUser, obtainTokens, registerClient } from '../helpers/fixtures.js';
import { copyMigratedPglite } from '../helpers/migrated-templates.js';
import { tempDataDir } from '../helpers/services.js';
import { jwksOf, kidOf, kidsOf, listKeys, until } from '../helpers/signing-keys.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

const dataDir = tempDataDir('oauth-keys-embedded');
/** Reads every 500 ms; tokens live their default hour, so the first key stays published throughout. */
const ENV = { KEYS_POLL_INTERVAL_MS: '500' };
const legacy = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: 'legacy-1', alg: 'RS256', use: 'sig' };
const keysJson = JSON.stringify({ cookieKeys: [randomBytes(32).toString('base64url')], jwks: { keys: [legacy] } }, null, 2);
let t: TestApp;
let client: TestClient;
let user: TestUser;
beforeAll(async () => {
  fs.writeFileSync(path.join(dataDir, 'keys.json'), keysJson, { mode: 0o600 });
  // Its database is migrated already (a copy of the template, no signing key in it): what is
  // tested is keys.json seeding the key table, not a first start of PGlite.
  await copyMigratedPglite(dataDir);
  t = await startTestApp({ mode: 'embedded', env: { ...ENV, DATA_DIR: dataDir, JWKS_FILE: '' } }); // no fixture key: keys.json's seeds
  client = await registerClient(t);
  user = await createUser(t);
}, EMBEDDED_TIMEOUT);
afterAll(async () => {
  await t?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const cli = (args: string[]) => runCli(args, { DATA_DIR: dataDir, ...ENV });
const idToken = async () => (await obtainTokens(t, client, user) as unknown as { id_token: string }).id_token;

test('the key an earlier version generated into DATA_DIR/keys.json signs on; the encryption key is generated beside it', async () => {
  expect(kidsOf(await jwksOf(t.baseUrl))).toEqual(['legacy-1']);
  expect(kidOf(await idToken())).toBe('legacy-1');
  expect(fs.statSync(path.join(dataDir, 'keys-encryption-key')).mode & 0o777).toBe(0o600);
  expect(fs.readFileSync(path.join(dataDir, 'keys.json'), 'utf8')).toBe(keysJson); // read, never rewritten
  const { rows } = await t.app.db.withConnection((sql) => sql.query<{ row: string }>('SELECT t::text AS row FROM signing_keys t'));
  expect(rows).toHaveLength(1);
  expect(rows[0]!.row).not.toContain(String(legacy.d));
}, EMBEDDED_TIMEOUT);

test('stopped, keys:rotate on DATA_DIR; started again, the service publishes the new key and signs with it from the stored time', async () => {
  const before = await idToken();
  await t.close({ keepData: true });

  // Ahead by enough for a listing, an embedded restart and a sign-in on a loaded machine, all before the switch.
  const rotated = expectSuccess(await cli(['keys:rotate', '--publish-ahead', '40s'])).stdout.split('\n');
  const [, kid, currentAt] = /^key (\S+) \(RS256\) is published now and signs from (\S+)$/.exec(rotated[0]!) ?? [];
  expect(kid).toBeDefined();
  expect(rotated[1]).toMatch(/^key legacy-1 signs until then and stays published until \S+, when every token it signed has expired$/);
  expect(rotated[2]).toBe('every instance reads the change within 0.5 s (KEYS_POLL_INTERVAL_MS); keys:list shows the states');
  expect((await listKeys(cli)).map((key) => [key.kid, key.state])).toEqual([[kid, 'next'], ['legacy-1', 'current']]);

  t = await startTestApp({ mode: 'embedded', reuse: t.env });
  expect(Date.now()).toBeLessThan(Date.parse(currentAt!)); // the restart came before the switch
  const ahead = await jwksOf(t.baseUrl);
  expect(kidsOf(ahead)).toEqual([kid!, 'legacy-1'].sort());
  expect(kidOf(await idToken())).toBe('legacy-1');

  await until(currentAt!, 100);
  const after = await idToken();
  expect(kidOf(after)).toBe(kid);
  await jwtVerify(after, createLocalJWKSet(ahead), { issuer: t.baseUrl, audience: client.client_id });
  await jwtVerify(before, createLocalJWKSet(await jwksOf(t.baseUrl)), { issuer: t.baseUrl, audience: client.client_id });
}, 4 * EMBEDDED_TIMEOUT);
