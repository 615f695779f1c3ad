/**
 * store/turn-batch.ts: the lookups of one event-loop turn go to the store in one call.
 */
import { describe, expect, test } from '@jest/globals';
import { turnBatch } from '../../src/store/turn-batch.js';
import type { Outcome } from '../../src/store/turn-batch.js';

function recording<V>(answer: (keys: string[]) => Promise<Outcome<V>[]>) {
  const loads: string[][] = [];
  const find = turnBatch<string, V>((keys) => {
    loads.push(keys);
    return answer(keys);
  });
  return { loads, find };
}

describe('turnBatch', () => {
  test('calls of one turn share one load, in the order they were made, and each gets its own answer', async () => {
    const { loads, find } = recording(async (keys) => keys.map((key): Outcome<string> => [null, key.toUpperCase()]));
    expect(await Promise.all([find('a'), find('b'), find('a')])).toEqual(['A', 'B', 'A']);
    expect(loads).toEqual([['a', 'b', 'a']]);
  });

  test('calls of later turns make loads of their own', async () => {
    const { loads, find } = recording(async (keys) => keys.map((key): Outcome<string> => [null, key]));
    await find('a');
    await find('b');
    expect(loads).toEqual([['a'], ['b']]);
  });

  test('a key the store refused fails its call only', async () => {
    const { find } = recording(async (keys) => keys.map((key): Outcome<string> => (key === 'bad' ? [new Error('refused'), ''] : [null, key])));
    const [good, bad] = await Promise.allSettled([find('good'), find('bad')]);
    expect(good).toEqual({ status: 'fulfilled', value: 'good' });
    expect(bad).toMatchObject({ status: 'rejected', reason: new Error('refused') });
  });

  test('a failed load fails every call of its turn, and the next turn loads again', async () => {
    let fail = true;
    const { find } = recording(async (keys) => {
      if (fail) throw new Error('store down');
      return keys.map((key): Outcome<string> => [null, key]);
    });
    const results = await Promise.allSettled([find('a'), find('b')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await find('c')).toBe('c');
  });

  test('a load that throws before it returns a promise fails its calls too', async () => {
    const find = turnBatch<string, string>(() => { throw new Error('bad statement'); });
    await expect(find('a')).rejects.toThrow('bad statement');
  });

  test('fewer answers than keys: the calls without one fail', async () => {
    const { find } = recording(async () => [[null, 'only one'] as Outcome<string>]);
    const [first, second] = await Promise.allSettled([find('a'), find('b')]);
    expect(first).toEqual({ status: 'fulfilled', value: 'only one' });
    expect(second.status).toBe('rejected');
  });
});
