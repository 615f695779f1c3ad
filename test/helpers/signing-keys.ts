/**
 * Signing keys as a client and an operator see them: the JWKS an instance publishes, the `kid`
 * an ID token names, `keys:list` and `keys:rotate` through the CLI; and short windows, so that a
 * whole rotation (next → current → retiring → retired) takes seconds.
 *
 * @example const rotation = await rotate(cli, '3s'); await until(rotation.current_at);
 */
import { expect } from '@jest/globals';
import { decodeProtectedHeader } from 'jose';
import type { JSONWebKeySet } from 'jose';
import { expectSuccess } from './cli.js';
import type { NodeRun } from './run-node.js';

/**
 * Instances read the key table every 500 ms; ID and access tokens live 4 s and verifiers get 1 s
 * of leeway, so a replaced key retires 5 s after it stopped signing. The CLI must run with the
 * same values: it computes the schedule.
 */
export const SHORT_WINDOWS = { KEYS_POLL_INTERVAL_MS: '500', ID_TOKEN_TTL: '4', ACCESS_TOKEN_TTL: '4', KEYS_RETIRE_LEEWAY: '1' } as const;
export const POLL_MS = Number(SHORT_WINDOWS.KEYS_POLL_INTERVAL_MS);

export interface ListedKey {
  kid: string;
  alg: string;
  state: 'next' | 'current' | 'retiring' | 'retired';
  created_at: string;
  current_at: string;
  retiring_at: string | null;
  retired_at: string | null;
}

export interface RotationResult {
  kid: string;
  alg: string;
  state: 'next';
  current_at: string;
  replaces: { kid: string; retiring_at: string; retired_at: string };
}

type Cli = (args: string[]) => Promise<NodeRun>;

export async function jwksOf(baseUrl: string): Promise<JSONWebKeySet> {
  const res = await fetch(`${baseUrl}/api/jwks.php`);
  if (res.status !== 200) throw new Error(`GET /api/jwks.php: ${res.status} ${await res.text()}`);
  return res.json() as Promise<JSONWebKeySet>;
}

export const kidsOf = (jwks: JSONWebKeySet) => jwks.keys.map((key) => key.kid!).sort();

export const kidOf = (jwt: string) => decodeProtectedHeader(jwt).kid!;

export async function listKeys(cli: Cli): Promise<ListedKey[]> {
  return JSON.parse(expectSuccess(await cli(['keys:list', '--json'])).stdout) as ListedKey[];
}

export async function rotate(cli: Cli, publishAhead: string): Promise<RotationResult> {
  return JSON.parse(expectSuccess(await cli(['keys:rotate', '--publish-ahead', publishAhead, '--json'])).stdout) as RotationResult;
}

/** Resolves once the clock has passed `time` (an ISO string or epoch ms) by `afterMs`. */
export async function until(time: string | number, afterMs = 0): Promise<void> {
  const at = (typeof time === 'string' ? Date.parse(time) : time) + afterMs;
  while (Date.now() < at) await new Promise((resolve) => setTimeout(resolve, Math.min(50, at - Date.now())));
}

/** Private JWK members: none of them may be published or stored in the clear. */
export const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

export function expectPublicOnly(jwks: JSONWebKeySet) {
  for (const key of jwks.keys) expect(Object.keys(key).filter((name) => PRIVATE_MEMBERS.includes(name))).toEqual([]);
}
