/**
 * A private_key_jwt client's side, as a test holds it: a key pair and client assertions
 * (RFC 7523 §2.2) signed with it, well-formed unless told otherwise.
 *
 * @example const key = await makeKey(); const form = assertionForm(await signAssertion(key, { client: id, audience: t.baseUrl }));
 */
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { JWK } from 'jose';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export interface TestKey {
  readonly alg: string;
  readonly privateKey: PrivateKey;
  /** The public JWK, with the kid when the key has one. */
  readonly publicJwk: JWK;
  readonly kid: string | undefined;
}

export async function makeKey(alg = 'RS256', kid?: string): Promise<TestKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), ...(kid === undefined ? {} : { kid }) };
  return { alg, privateKey, publicJwk, kid };
}

export const jwksOf = (...keys: TestKey[]) => ({ keys: keys.map((key) => key.publicJwk) });

export interface AssertionOptions {
  /** The client: iss and sub (RFC 7523 §3). */
  client: string;
  audience: string | string[];
  /** Seconds from now; default 0 and 300. */
  issuedIn?: number;
  expiresIn?: number;
  notBeforeIn?: number;
  jti?: string;
  /** Overrides of claims (an `iss` other than the client, say). */
  claims?: Record<string, unknown>;
  /** Leave out `kid` even when the key has one (the MCP SDK's assertions carry none). */
  noKid?: boolean;
  alg?: string;
}

export async function signAssertion(key: TestKey, options: AssertionOptions): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: Record<string, unknown> = {
    iss: options.client, sub: options.client, aud: options.audience,
    iat: now + (options.issuedIn ?? 0), exp: now + (options.expiresIn ?? 300), jti: options.jti ?? randomBytes(12).toString('base64url'),
    ...(options.notBeforeIn === undefined ? {} : { nbf: now + options.notBeforeIn }),
    ...options.claims,
  };
  const header = { alg: options.alg ?? key.alg, typ: 'JWT', ...(key.kid && !options.noKid ? { kid: key.kid } : {}) };
  return new SignJWT(payload as never).setProtectedHeader(header).sign(key.privateKey);
}

/** The form members that present `assertion` (RFC 7521 §4.2). */
export const assertionForm = (assertion: string) => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: assertion });
