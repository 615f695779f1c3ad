/**
 * `npm run bench -- --against <git-ref>` and `--variants NAME=a,b`: which two sides a run
 * compares, over how many rounds, and in which order it measures them. Pure: the ref lookup is
 * a fixed table, the measurements are recorded calls.
 */
import { describe, expect, test } from '@jest/globals';
import { alternate, comparisonPlan, comparisonTitle, roundOrder } from '../../bench/lib/ab-plan.mjs';
import type { PlanOptions, Side } from '../../bench/lib/ab-plan.mjs';

const COMMITS: Record<string, string> = { main: 'f8d9e02acd6f8c71c534dd6b6c424d12f5a2d670', 'v1.0': '1c42efd0000000000000000000000000000000aa' };
const context = { env: { NODE_OPTIONS: '--max-semi-space-size=32' }, resolveRef: (ref: string) => COMMITS[ref], describe: () => '1c42efd-dirty' };
const plan = (options: PlanOptions) => comparisonPlan(options, context);
const problem = (options: PlanOptions) => {
  try {
    plan(options);
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
};

describe('--variants NAME=a,b', () => {
  test('one build under two values of one variable, on top of --env; 2 rounds unless told', () => {
    expect(plan({ variants: 'DATABASE_BATCHING=turn,off' })).toEqual({
      kind: 'variants',
      rounds: 2,
      sides: [
        { id: 'A', name: 'DATABASE_BATCHING=turn', env: { NODE_OPTIONS: '--max-semi-space-size=32', DATABASE_BATCHING: 'turn' } },
        { id: 'B', name: 'DATABASE_BATCHING=off', env: { NODE_OPTIONS: '--max-semi-space-size=32', DATABASE_BATCHING: 'off' } },
      ],
    });
    expect(plan({ variants: 'DATABASE_BATCHING=turn, off', rounds: '4' })?.sides[1]?.env.DATABASE_BATCHING).toBe('off');
    expect(plan({ variants: 'DATABASE_BATCHING=auto,auto', rounds: '4' })?.rounds).toBe(4); // an A/A run shows the noise
  });

  test('a value with "=" in it is the value', () => {
    expect(plan({ variants: 'NODE_EXTRA=--a=1,--a=2' })?.sides.map((side) => side.env.NODE_EXTRA)).toEqual(['--a=1', '--a=2']);
  });

  test('without "=", without a name, or without exactly two values: the reason, naming the option', () => {
    expect(problem({ variants: 'DATABASE_BATCHING' })).toBe('--variants takes NAME=a,b (a variable and its two values), got "DATABASE_BATCHING"');
    expect(problem({ variants: '=turn,off' })).toBe('--variants takes NAME=a,b (a variable and its two values), got "=turn,off"');
    expect(problem({ variants: 'NOT A NAME=turn,off' })).toBe('--variants takes NAME=a,b (a variable and its two values), got "NOT A NAME=turn,off"');
    expect(problem({ variants: 'DATABASE_BATCHING=turn' })).toBe('--variants takes two values, NAME=a,b, got "DATABASE_BATCHING=turn"');
    expect(problem({ variants: 'DATABASE_BATCHING=turn,' })).toBe('--variants takes two values, NAME=a,b, got "DATABASE_BATCHING=turn,"');
    expect(problem({ variants: 'DATABASE_BATCHING=auto,turn,off' })).toBe('--variants takes two values, NAME=a,b, got "DATABASE_BATCHING=auto,turn,off"');
    expect(problem({ variants: 'NODE_OPTIONS=a,b' })).toBe('--variants: NODE_OPTIONS is also given by --env; give it in one place');
  });
});

describe('--against <git-ref>', () => {
  test('this checkout (A) against the commit the ref names (B)', () => {
    expect(plan({ against: 'main', rounds: '3' })).toEqual({
      kind: 'against',
      rounds: 3,
      sides: [
        { id: 'A', name: 'this checkout (1c42efd-dirty)', env: context.env },
        { id: 'B', name: 'main (f8d9e02)', env: context.env, ref: 'main', commit: COMMITS.main },
      ],
    });
    expect(comparisonPlan({ against: 'v1.0' }, { resolveRef: (ref) => COMMITS[ref] })?.sides[0]?.name).toBe('this checkout');
  });

  test('a ref that names no commit, an empty one or an option-like one: the reason', () => {
    for (const ref of ['no-such-branch', '', '-h']) {
      expect(problem({ against: ref })).toBe(`--against: "${ref}" names no commit of this repository (a branch, tag or commit)`);
    }
  });
});

describe('--rounds and the two options together', () => {
  test('no comparison asked: none, and the run stays as it was', () => {
    expect(plan({})).toBeUndefined();
  });

  test('not a whole number of at least 1, or without a comparison: the reason', () => {
    for (const rounds of ['0', '-1', '1.5', 'two', '']) {
      expect(problem({ variants: 'X=a,b', rounds })).toBe(`--rounds must be a whole number of at least 1, got "${rounds}"`);
    }
    expect(plan({ variants: 'X=a,b', rounds: '1' })?.rounds).toBe(1);
    expect(problem({ rounds: '3' })).toBe('--rounds needs --against or --variants');
  });

  test('both options at once: the reason', () => {
    expect(problem({ against: 'main', variants: 'X=a,b' })).toBe('--against and --variants each name both sides: give one of them');
  });
});

describe('the order of the measurements', () => {
  const sides = plan({ variants: 'X=a,b', rounds: '3' })!.sides;

  test('A then B in odd rounds, B then A in even ones', () => {
    const ids = (list: Side[]) => list.map((side) => side.id).join('');
    expect([1, 2, 3, 4].map((round) => ids(roundOrder(sides, round)))).toEqual(['AB', 'BA', 'AB', 'BA']);
    expect(ids(sides)).toBe('AB'); // the plan's own order is left alone
  });

  test('each row over every round before the next row; each figure carries its side and round', async () => {
    const calls: string[] = [];
    const figures = await alternate({ kind: 'variants', rounds: 3, sides }, ['userinfo', 'exchange'], async (side, row, round) => {
      calls.push(`${row} ${round}${side.id}`);
      return { row, perSecond: calls.length };
    });
    expect(calls).toEqual(['userinfo 1A', 'userinfo 1B', 'userinfo 2B', 'userinfo 2A', 'userinfo 3A', 'userinfo 3B',
      'exchange 1A', 'exchange 1B', 'exchange 2B', 'exchange 2A', 'exchange 3A', 'exchange 3B']);
    expect(figures[2]).toEqual({ row: 'userinfo', perSecond: 3, side: 'B', round: 2 });
  });

  test('the title names the rounds, their order and both sides', () => {
    expect(comparisonTitle(plan({ variants: 'DATABASE_BATCHING=turn,off' })!))
      .toBe('A/B in this run, 2 rounds per row (A then B, then B then A): A = DATABASE_BATCHING=turn, B = DATABASE_BATCHING=off');
    expect(comparisonTitle(plan({ against: 'main', rounds: '1' })!))
      .toBe('A/B in this run, 1 round per row (A then B): A = this checkout (1c42efd-dirty), B = main (f8d9e02)');
  });
});
