/**
 * A client's name is shown to users on the login and consent pages (src/clients/client-name.ts):
 * it must read as what it is. Names in any script pass; blank, invisible, reversed and stacked
 * ones are refused, naming client_name.
 */
import { describe, expect, test } from '@jest/globals';
import { ClientInputError, validName } from '../../src/clients/client-name.js';

const refusal = (name: string) => {
  try {
    validName(name);
  } catch (error) {
    expect(error).toBeInstanceOf(ClientInputError);
    return (error as Error).message;
  }
  return undefined;
};

describe('client names a person can see', () => {
  test.each([
    ['Latin with accents', 'Ünïcødé'],
    ['Vietnamese (two marks on one letter)', 'Tiếng Việt'],
    ['the same, decomposed', 'Tiếng Việt'.normalize('NFD')],
    ['Japanese and an emoji family (zero-width joiners)', 'アプリ 👩‍👩‍👧'],
    ['Devanagari', 'हिन्दी ऐप'],
    ['Arabic', 'تطبيق'],
    ['Hebrew with a digit', 'אפליקציה 2'],
    ['Persian with a zero-width non-joiner', 'می‌خواهم'],
    ['digits only', '2048'],
    ['a letter among symbols', '★ Photo ★'],
  ])('%s is taken', (_, name) => {
    expect(validName(name)).toBe(name);
  });

  test.each([
    ['the Hangul filler', '\u3164'],
    ['the Hangul filler after a name', 'Photos\u3164\u3164\u3164'],
    ['the Hangul choseong filler', '\u115f'],
    ['the Hangul jungseong filler', 'App\u1160'],
    ['the halfwidth Hangul filler', '\uffa0'],
    ['the Braille blank', '\u2800\u2800'],
    ['the Braille blank inside a name', 'Pay\u2800Pal'],
    ['a soft hyphen', 'Pay\u00adPal'],
    ['a zero-width space', 'Pay\u200bPal'],
    ['a Mongolian vowel separator', 'App\u180e'],
    ['a byte-order mark inside a name', 'Pay\ufeffPal'],
    ['a left-to-right mark', 'App\u200e'],
    ['a right-to-left mark', '\u200fApp'],
    ['an Arabic letter mark', 'App\u061c'],
    ['a right-to-left override', 'Demo \u202egnp.exe'],
    ['a first-strong isolate', 'Demo \u2068x\u2069'],
    ['five combining marks on one letter', 'Z\u0301\u0302\u0303\u0304\u0305algo'],
    ['marks with no letter', '\u0301\u0302'],
    ['symbols only', '🚀🚀'],
    ['punctuation only', '...'],
    ['blank', '   '],
  ])('%s is refused, naming client_name', (_, name) => {
    expect(refusal(name)).toMatch(/^client_name /);
  });

  test('four combining marks on one letter are still a name (some scripts stack that many)', () => {
    expect(validName('a\u0301\u0302\u0303\u0304b')).toBe('a\u0301\u0302\u0303\u0304b');
  });
});
