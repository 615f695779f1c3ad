/** A rotated secret's grace: whether the replaced secret still works, and when it stops (src/clients/secret-grace.ts). */
import { expect, test } from '@jest/globals';
import { graceEnd, inGrace } from '../../src/clients/secret-grace.js';

test('graceEnd is a whole second, never before now + grace; now itself for a grace of 0', () => {
  const now = new Date('2026-11-27T10:00:00.250Z');
  expect(graceEnd(now, 0)).toEqual(now);
  expect(graceEnd(now, 1000).toISOString()).toBe('2026-11-27T10:00:02.000Z');
  expect(graceEnd(now, 3_600_000).toISOString()).toBe('2026-11-27T11:00:01.000Z');
  expect(graceEnd(new Date('2026-11-27T10:00:00.000Z'), 30_000).toISOString()).toBe('2026-11-27T10:00:30.000Z');
});

test('a replaced secret works while one was kept and its grace has not ended', () => {
  const until = new Date('2026-11-27T11:00:00.000Z');
  expect(inGrace('digest', until, new Date('2026-11-27T10:59:59.999Z'))).toBe(true);
  expect(inGrace('digest', until, until)).toBe(false);
  expect(inGrace(null, until, new Date('2026-11-27T10:00:00.000Z'))).toBe(false);
  expect(inGrace('digest', null, new Date('2026-11-27T10:00:00.000Z'))).toBe(false);
});
