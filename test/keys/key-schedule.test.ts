/**
 * A signing key's state from its stored times and the clock (src/keys/key-schedule.ts): what is
 * published and what signs at each moment of a rotation, when that changes, and the windows
 * computed from configuration.
 */
import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { changesAfter, minimumPublishAheadMs, publishedAt, retireAfterMs, stateAt } from '../../src/keys/key-schedule.js';
import type { ScheduledKey } from '../../src/keys/key-schedule.js';

const at = (second: number) => new Date(Date.UTC(2026, 10, 27, 10, 0, second));
const key = (kid: string, current: number, retiring?: number, retired?: number): ScheduledKey => ({
  kid, currentAt: at(current), retiringAt: retiring === undefined ? null : at(retiring), retiredAt: retired === undefined ? null : at(retired),
});
const time = (second: number) => at(second).getTime();
const kids = (keys: ScheduledKey[]) => keys.map((k) => k.kid);

describe('a rotation: old current from 0, replaced at 10 by new, old retired at 30', () => {
  const old = key('old', 0, 10, 30);
  const fresh = key('new', 10);
  const keys = [old, fresh];

  test.each([
    [5, 'current', 'next', ['old', 'new']],
    [9.999, 'current', 'next', ['old', 'new']],
    [10, 'retiring', 'current', ['new', 'old']], // the stored instant: the new key signs
    [29, 'retiring', 'current', ['new', 'old']],
    [30, 'retired', 'current', ['new']],
  ])('at %s s: old is %s, new is %s; published (signing key first) %j', (second, oldState, newState, published) => {
    expect(stateAt(old, time(second))).toBe(oldState);
    expect(stateAt(fresh, time(second))).toBe(newState);
    expect(kids(publishedAt(keys, time(second)))).toEqual(published);
  });

  test('the published set changes at the switch and at the retirement', () => {
    expect(changesAfter(keys, time(5))).toEqual([time(10), time(30)]);
    expect(changesAfter(keys, time(10))).toEqual([time(30)]);
    expect(changesAfter(keys, time(30))).toEqual([]);
  });
});

test('seeded keys beyond the first are retiring from the start, never signing', () => {
  const signing = key('first', 0);
  const other = key('other', 0, 0, 20);
  expect(stateAt(other, time(0))).toBe('retiring');
  expect(kids(publishedAt([other, signing], time(0)))).toEqual(['first', 'other']);
  expect(kids(publishedAt([other, signing], time(20)))).toEqual(['first']);
});

test('a table with no current key publishes nothing (the instance keeps what it has)', () => {
  expect(publishedAt([key('gone', 0, 5, 6)], time(10))).toEqual([]);
});

describe('windows from configuration', () => {
  test('a replaced key stays published for the longest token lifetime plus the leeway', () => {
    expect(retireAfterMs(loadConfig({}))).toBe((3600 + 300) * 1000);
    expect(retireAfterMs(loadConfig({ ID_TOKEN_TTL: '600', ACCESS_TOKEN_TTL: '7200', KEYS_RETIRE_LEEWAY: '0' }))).toBe(7200 * 1000);
    expect(retireAfterMs(loadConfig({ ID_TOKEN_TTL: '900', ACCESS_TOKEN_TTL: '60', KEYS_RETIRE_LEEWAY: '30' }))).toBe(930 * 1000);
  });

  test('a resource whose JWT access tokens live longer keeps a replaced key published as long (RESOURCES, or the longest stored)', () => {
    const declared = JSON.stringify([{ uri: 'https://api.example.com', scopes: 'a', access_token_ttl: 10_000 }]);
    expect(retireAfterMs(loadConfig({ RESOURCES: declared, KEYS_RETIRE_LEEWAY: '0' }))).toBe(10_000 * 1000);
    expect(retireAfterMs(loadConfig({ KEYS_RETIRE_LEEWAY: '0' }), 20_000)).toBe(20_000 * 1000);
    expect(retireAfterMs(loadConfig({ KEYS_RETIRE_LEEWAY: '0' }), 60)).toBe(3600 * 1000);
  });

  test('a key is published at least two reads before it signs', () => {
    expect(minimumPublishAheadMs(loadConfig({}))).toBe(60_000);
    expect(minimumPublishAheadMs(loadConfig({ KEYS_POLL_INTERVAL_MS: '500' }))).toBe(1000);
  });
});
