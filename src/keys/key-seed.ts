/**
 * The keys a first start stores (the key table is empty): JWKS_FILE's when it is set; else those
 * an earlier version generated into DATA_DIR/keys.json (so a development set-up keeps its tokens
 * valid across the upgrade); else one generated now. The first RS256 key signs: ID tokens are
 * RS256 (clients register no `id_token_signed_response_alg`, and the provider's default is
 * RS256). The set's other keys were published before and may have signed tokens, so they stay
 * published as `retiring` for one retire window, then retire.
 *
 * @see docs/signing-keys.md "Seeding"
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign, verify } from 'node:crypto';
import type { JsonWebKey } from 'node:crypto';
import fs from 'node:fs';
import { ConfigError } from '../config.js';
import type { Config } from '../config.js';
import { keysFile } from '../store/cookie-keys.js';
import type { NewKey } from './signing-keys.js';

/** A fresh RS256 signing key as a private JWK. */
export function generateSigningKey(): JsonWebKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

/** The private JWKS an earlier version generated into DATA_DIR/keys.json, if there is one. */
export function jwksFromDataDir(dataDir: string): { file: string; jwks: unknown } | undefined {
  const file = keysFile(dataDir);
  if (!fs.existsSync(file)) return undefined;
  const { jwks } = JSON.parse(fs.readFileSync(file, 'utf8')) as { jwks?: unknown };
  return jwks === undefined ? undefined : { file, jwks };
}

/** The algorithms a stored key may carry: the provider's (provider.ts ASYMMETRIC), by key type. */
const ALGORITHMS: Record<string, (jwk: JsonWebKey) => string[]> = {
  RSA: () => ['RS256', 'PS256'],
  EC: (jwk) => (jwk.crv === 'P-256' ? ['ES256'] : []),
  OKP: (jwk) => (jwk.crv === 'Ed25519' ? ['EdDSA'] : []),
};

/** The members RFC 7638 hashes, by key type (oidc-provider names a key without `kid` the same way). */
const THUMBPRINT_MEMBERS: Record<string, (keyof JsonWebKey)[]> = { RSA: ['e', 'kty', 'n'], EC: ['crv', 'kty', 'x', 'y'], OKP: ['crv', 'kty', 'x'] };

/** @see RFC 7638 §3 */
const thumbprint = (jwk: JsonWebKey) => createHash('sha256')
  .update(JSON.stringify(Object.fromEntries(THUMBPRINT_MEMBERS[jwk.kty!]!.map((name) => [name, jwk[name]])))).digest('base64url');

export interface SeedKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateJwk: JsonWebKey;
  readonly publicJwk: JsonWebKey;
}

/** One private signing key of a JWKS, checked: a clear error naming `variable` otherwise. */
function seedKey(input: unknown, index: number, variable: string, where: string): SeedKey {
  const refuse = (problem: string) => new ConfigError(variable, `${where}: keys[${index}] ${problem}`);
  const jwk = input as JsonWebKey;
  if (typeof input !== 'object' || input === null || typeof jwk.kty !== 'string' || !ALGORITHMS[jwk.kty]) throw refuse('must be an RSA, EC or OKP key');
  if (jwk.use !== undefined && jwk.use !== 'sig') throw refuse(`is for "${String(jwk.use)}", not for signing`);
  const algorithms = ALGORITHMS[jwk.kty]!(jwk);
  const alg = jwk.alg === undefined ? algorithms[0] : String(jwk.alg);
  if (!alg || !algorithms.includes(alg)) throw refuse(`cannot sign with ${alg ?? `the ${String(jwk.crv)} curve`}: the provider signs with RS256 or PS256 (RSA), ES256 (EC P-256) or EdDSA (OKP Ed25519)`);
  let publicJwk: JsonWebKey;
  try {
    // Parsing does not check that the parts belong together: a signature that verifies does.
    const privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
    const publicKey = createPublicKey(privateKey);
    const digest = jwk.kty === 'OKP' ? null : 'sha256';
    const probe = Buffer.from('signing-key check');
    if (!verify(digest, probe, publicKey, sign(digest, probe, privateKey))) throw new Error('its signatures do not verify');
    publicJwk = publicKey.export({ format: 'jwk' });
  } catch (error) {
    throw refuse(`is not a usable private key (${(error as Error).message})`);
  }
  const kid = typeof jwk.kid === 'string' && jwk.kid !== '' ? jwk.kid : thumbprint(jwk);
  // Every key names its alg and use: the provider ranks keys that name them above keys that do
  // not before it looks at their order (lib/helpers/keystore.js), and only the order may decide.
  const named = { kid, alg, use: 'sig' };
  return { kid, alg, privateJwk: { ...jwk, ...named }, publicJwk: { ...publicJwk, ...named } };
}

/** `{"keys": [...]}` of private signing keys with distinct kids, checked. */
export function seedKeysOf(jwks: unknown, variable: string, where: string): SeedKey[] {
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.some((key) => typeof key !== 'object' || key === null || !('d' in key))) {
    throw new ConfigError(variable, `${where} must hold {"keys": [...]} with at least one private key`);
  }
  const checked = keys.map((key, index) => seedKey(key, index, variable, where));
  const kids = checked.map((key) => key.kid);
  const repeated = kids.find((kid, index) => kids.indexOf(kid) !== index);
  if (repeated !== undefined) throw new ConfigError(variable, `${where}: kid "${repeated}" is used by more than one key`);
  if (!checked.some((key) => key.alg === 'RS256')) throw new ConfigError(variable, `${where} holds no RS256 key, the algorithm ID tokens are signed with`);
  return checked;
}

/** A fresh RS256 key ({@link generateSigningKey}), with its public part. */
export const newSigningKey = (): SeedKey => seedKey(generateSigningKey(), 0, 'JWKS_FILE', 'a generated key');

/** JWKS_FILE's keys, or undefined when it is unset. A file that cannot be read or used stops start-up. */
export function jwksFileKeys(config: Config): SeedKey[] | undefined {
  const file = config.jwksFile;
  if (file === undefined) return undefined;
  let jwks: unknown;
  try {
    jwks = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError('JWKS_FILE', `cannot read a JSON key set from ${file}: ${(error as Error).message}`);
  }
  return seedKeysOf(jwks, 'JWKS_FILE', file);
}

/** What a first start stores, and where it came from. */
export function seedSource(config: Config, fileKeys: SeedKey[] | undefined): { source: string; keys: SeedKey[] } {
  if (fileKeys) return { source: `JWKS_FILE (${config.jwksFile})`, keys: fileKeys };
  const legacy = jwksFromDataDir(config.dataDir);
  if (legacy) return { source: legacy.file, keys: seedKeysOf(legacy.jwks, 'DATA_DIR', `${legacy.file} "jwks"`) };
  return { source: 'generated', keys: [newSigningKey()] };
}

/** The rows of a seed at `now`: the first RS256 key current, the others retiring until `retireAfterMs` from now. */
export function seedRows(keys: SeedKey[], now: Date, retireAfterMs: number, seal: (kid: string, jwk: JsonWebKey) => string): NewKey[] {
  const signing = keys.find((key) => key.alg === 'RS256')!;
  const retiredAt = new Date(now.getTime() + retireAfterMs);
  return keys.map((key) => ({
    kid: key.kid,
    alg: key.alg,
    publicJwk: key.publicJwk,
    sealed: seal(key.kid, key.privateJwk),
    currentAt: now,
    ...(key === signing ? { retiringAt: null, retiredAt: null } : { retiringAt: now, retiredAt }),
  }));
}
