/**
 * A client's name, as the spec's registration and RFC 7591 take it: shown to users on the login
 * and consent pages, so it must read as what it is.
 */

export class ClientInputError extends Error {
  override name = 'ClientInputError';
}

const MAX_NAME_LENGTH = 100;

/** The trimmed name, or a {@link ClientInputError} saying what is wrong. */
export function validName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new ClientInputError('client_name is required');
  const name = value.trim();
  if (name.length > MAX_NAME_LENGTH) throw new ClientInputError(`client_name must be at most ${MAX_NAME_LENGTH} characters`);
  // Shown to users on the login and consent pages: no control characters (C0, DEL, C1), no
  // direction overrides or isolates (which can show a name reversed: Unicode TR #36 §2.1), and
  // something visible (not only zero-width or other format characters).
  if (/[\p{Cc}\u202a-\u202e\u2066-\u2069]/u.test(name)) {
    throw new ClientInputError('client_name must not contain control characters or text-direction overrides');
  }
  if (!/[^\p{Cf}\p{White_Space}]/u.test(name)) throw new ClientInputError('client_name must contain a visible character');
  return name;
}
