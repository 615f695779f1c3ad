/**
 * How the CLI reads a command line (src/cli/args.ts): strictly, and without the traps of
 * node:util's parseArgs read alone: a value starting with `-` (about one client_id in 64 does),
 * an empty value, an option given twice.
 */
import { describe, expect, test } from '@jest/globals';
import { parse, UsageError } from '../../src/cli/args.js';

const OPTIONS = { user: { type: 'string' }, client: { type: 'string' }, event: { type: 'string', multiple: true }, json: { type: 'boolean' } } as const;

describe('parse', () => {
  test('a client_id that starts with "-" is a value or a positional, never options', () => {
    const id = '-ibm1FAwdJ4N63vOeXSbeg';
    expect(parse(['--client', id], [], OPTIONS).values.client).toBe(id);
    expect(parse([`--client=${id}`, '--json'], [], OPTIONS).values).toEqual({ client: id, json: true });
    expect(parse([id], ['client_id'], {}).positionals).toEqual([id]);
    expect(parse(['--json', id], ['client_id'], OPTIONS).positionals).toEqual([id]);
    expect(parse(['--', '--json'], ['client_id'], OPTIONS).positionals).toEqual(['--json']);
  });

  test('an empty value is refused, not read as no option', () => {
    expect(() => parse(['--user', 'alice', '--client', ''], [], OPTIONS)).toThrow(new UsageError('--client needs a value, and was given an empty one'));
    expect(() => parse(['--user='], [], OPTIONS)).toThrow(UsageError);
    expect(() => parse(['--user'], [], OPTIONS)).toThrow(new UsageError('--user needs a value'));
  });

  test('an option followed by another option has no value (a forgotten one), unless written with =', () => {
    expect(() => parse(['--user', '--json'], [], OPTIONS)).toThrow(new UsageError('--user needs a value; for one that starts with --, write --user=--json'));
    expect(parse(['--user=--json'], [], OPTIONS).values.user).toBe('--json');
    expect(() => parse(['--Ab12'], ['client_id'], OPTIONS)).toThrow(new UsageError("Unknown option '--Ab12' (an argument that starts with - goes after --, as in: -- --Ab12)"));
  });

  test('an option given twice is refused, but for a repeatable one', () => {
    expect(() => parse(['--user', 'zoe', '--user', 'bob'], [], OPTIONS)).toThrow(new UsageError('--user is given more than once'));
    expect(parse(['--event', 'a', '--event', 'b'], [], OPTIONS).values.event).toEqual(['a', 'b']);
  });

  test('unknown options, flags given values and missing or extra positionals are usage errors', () => {
    expect(() => parse(['--all'], [], OPTIONS)).toThrow(/Unknown option '--all'/);
    expect(() => parse(['--json=yes'], [], OPTIONS)).toThrow(UsageError);
    expect(() => parse([], ['user'], OPTIONS)).toThrow(new UsageError('missing <user>'));
    expect(() => parse(['a', 'b'], ['user'], OPTIONS)).toThrow(new UsageError('unexpected argument "b"'));
  });
});
