/** RFC 7636 S256: a code_verifier and its code_challenge. */
import { createHash, randomBytes } from 'node:crypto';

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The authorization request parameters of `pair`. */
export const pkceParams = (pair: { challenge: string }) => ({ code_challenge: pair.challenge, code_challenge_method: 'S256' });
