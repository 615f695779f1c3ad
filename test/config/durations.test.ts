/**
 * The grace of a secret rotation as operators write it (CLIENT_SECRET_ROTATION_GRACE, `--grace`,
 * the webhooks API's `grace`): `0` or a whole number of ms, s, m, h or d, at most 30 days.
 */
import { describe, expect, test } from '@jest/globals';
import { formatGrace, MAX_GRACE_MS, parseGrace } from '../../src/config/durations.js';

describe('parseGrace', () => {
  test.each<[string, number]>([
    ['0', 0], ['0s', 0], ['500ms', 500], ['0ms', 0], ['30s', 30_000], ['15m', 900_000], ['1h', 3_600_000], ['24h', 86_400_000], ['7d', 604_800_000], [' 2h ', 7_200_000], ['30d', MAX_GRACE_MS],
  ])('%j is %d ms', (text, ms) => {
    expect(parseGrace(text)).toBe(ms);
  });

  test.each(['', 'a day', '15', '1.5h', '-1h', '1H', '1 h', '1w', '31d', '721h', '1h30m', '99999999d'])('%j is refused', (text) => {
    expect(parseGrace(text)).toBeUndefined();
  });
});

test('formatGrace writes the largest whole unit, and reads back', () => {
  for (const [ms, text] of [[0, '0'], [30_000, '30s'], [5_400_000, '90m'], [3_600_000, '1h'], [86_400_000, '1d'], [1500, '2s']] as const) {
    expect(formatGrace(ms)).toBe(text);
  }
  for (const text of ['30s', '90m', '1h', '7d']) expect(formatGrace(parseGrace(text)!)).toBe(text);
});
