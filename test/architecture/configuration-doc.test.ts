/**
 * docs/configuration.md is checked against the one place variables are declared: the readers in
 * src/config.ts and src/config/*.ts. Every variable read there has a row, every row names a
 * variable read there (or says it is Node's own), and every duration's row gives its default
 * in the one notation (`500ms`, `30s`, `5m`, `1h`, `7d`), equal to the default in the code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from '@jest/globals';
import { ROOT } from '../helpers/build.js';

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const sources = ['src/config.ts', ...fs.readdirSync(path.join(ROOT, 'src/config')).map((file) => `src/config/${file}`)].map(read).join('\n');

/** Every variable a reader of src/config reads: `read(env, 'X')`, `integer(env, 'X', …)`, `duration(env, 'X', …)`, … */
const readInCode = new Set([...sources.matchAll(/\(env, '([A-Z][A-Z0-9_]+)'/g)].map((match) => match[1]!));

/** Rows of the doc's tables: the variables of the first cell, the default, the meaning. */
const rows = read('docs/configuration.md').split('\n').filter((line) => /^\| `[A-Z]/.test(line)).map((line) => {
  const [names, fallback, meaning] = line.split(' | ').map((cell) => cell.replace(/^\| /, ''));
  return { names: [...names!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1]!), fallback: fallback!, meaning: meaning! };
});

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

test('every variable the service reads has a row in docs/configuration.md, and every row is one it reads', () => {
  const documented = new Set(rows.flatMap((row) => row.names));
  expect([...readInCode].filter((name) => !documented.has(name))).toEqual([]);
  const notRead = rows.filter((row) => !row.meaning.startsWith("Node's own variable")).flatMap((row) => row.names).filter((name) => !readInCode.has(name));
  expect(notRead).toEqual([]);
});

test('every duration variable documents its default in the one notation, as the code has it', () => {
  const durations = [...sources.matchAll(/duration\(env, '([A-Z0-9_]+)', '(ms|s|d)', ([^,]+), /g)];
  expect(durations.length).toBeGreaterThan(20);
  const wrong = durations.flatMap(([, name, unit, fallbackText]) => {
    const row = rows.find((candidate) => candidate.names.includes(name!));
    if (!/^[\d_ *]+$/.test(fallbackText!)) return []; // computed from another variable: described in words
    const expected = Number(Function(`return ${fallbackText!.replaceAll('_', '')}`)()) * UNIT_MS[unit!]!;
    const written = /^`(\d+)(ms|s|m|h|d)`$/.exec(row?.fallback ?? '');
    const ms = written ? Number(written[1]) * UNIT_MS[written[2]!]! : Number.NaN;
    return ms === expected ? [] : [`${name}: the doc says ${row?.fallback}, the code ${fallbackText} ${unit}`];
  });
  expect(wrong).toEqual([]);
});
