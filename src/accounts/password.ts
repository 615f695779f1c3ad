/**
 * User passwords: argon2id with OWASP's minimum parameters (m = 19 MiB, t = 2, p = 1),
 * about 20 ms of CPU per hash on this class of machine.
 *
 * @see https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html#argon2id
 */
import { randomUUID } from 'node:crypto';
import argon2 from 'argon2';

const OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, OPTIONS);
}

export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false; // a malformed stored hash matches nothing
  }
}

/**
 * A hash of a random password, verified against when the username is unknown so that
 * "no such user" and "wrong password" take the same time.
 */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomUUID());
  return decoy;
}
