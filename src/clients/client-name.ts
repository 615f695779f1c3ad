/**
 * A client's name, as the spec's registration and RFC 7591 take it: shown to users on the login
 * and consent pages, so it must read as what it is. Anyone can register a client, so a name is a
 * string an attacker chooses (Unicode TR #36 "Unicode Security Considerations"):
 *
 * | refused                                                           | why                                                       |
 * |-------------------------------------------------------------------|-----------------------------------------------------------|
 * | control characters (C0, DEL, C1)                                  | not text                                                  |
 * | bidirectional marks, embeddings, overrides, isolates (Bidi_Control) | show a name reversed or reordered (TR #36 §2.1)         |
 * | default-ignorable characters (zero-width space, soft hyphen, Hangul fillers, …), but the joiners and variation selectors that scripts and emoji need | nothing to see: a name that reads blank, or pads another |
 * | blank symbols: the Braille blank (U+2800)                         | a symbol that draws nothing                               |
 * | more than {@link MAX_MARKS} combining marks on one character     | stacked marks draw over the text around them              |
 * | no letter or digit once marks are removed                         | " wants to read your profile": a name must name something |
 *
 * Look-alikes (Cyrillic for Latin) pass: the consent page shows the name beside the redirect host.
 */

export class ClientInputError extends Error {
  override name = 'ClientInputError';
}

const MAX_NAME_LENGTH = 100;

/** Combining marks one character may carry: Vietnamese needs two, some Indic and Tibetan clusters four. */
const MAX_MARKS = 4;

/** Default-ignorable, but needed: ZWNJ and ZWJ (Persian, Indic scripts, emoji sequences), variation selectors (emoji presentation). */
const NEEDED_IGNORABLE = /[\u200c\u200d\ufe00-\ufe0f]/gu;

/** Symbols that draw nothing and are not default-ignorable. */
const BLANK_SYMBOLS = /\u2800/u;

/** The trimmed name, or a {@link ClientInputError} saying what is wrong. */
export function validName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new ClientInputError('client_name is required');
  const name = value.trim();
  if (name.length > MAX_NAME_LENGTH) throw new ClientInputError(`client_name must be at most ${MAX_NAME_LENGTH} characters`);
  if (/[\p{Cc}\p{Bidi_Control}]/u.test(name)) {
    throw new ClientInputError('client_name must not contain control characters or text-direction marks and overrides');
  }
  if (/\p{Default_Ignorable_Code_Point}/u.test(name.replace(NEEDED_IGNORABLE, '')) || BLANK_SYMBOLS.test(name)) {
    throw new ClientInputError('client_name must not contain invisible or blank characters (zero-width spaces, Hangul fillers, the Braille blank, …)');
  }
  const decomposed = name.normalize('NFD');
  if (new RegExp(`\\p{M}{${MAX_MARKS + 1}}`, 'u').test(decomposed)) {
    throw new ClientInputError(`client_name must not stack more than ${MAX_MARKS} combining marks on one character`);
  }
  if (!/[\p{L}\p{N}]/u.test(decomposed.replace(/\p{M}/gu, ''))) {
    throw new ClientInputError('client_name must contain a visible letter or digit');
  }
  return name;
}
