/**
 * The README stays a page a newcomer reads in minutes: no line over 200 characters, and its list
 * of paths, one line each, names every path openapi.json describes; docs/api.md, where each path
 * is described in full, names every one too.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from '@jest/globals';
import { ROOT } from '../helpers/build.js';

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const documented = Object.keys((JSON.parse(read('openapi.json')) as { paths: Record<string, unknown> }).paths);

test('no line of the README is longer than 200 characters', () => {
  const long = read('README.md').split('\n').map((line, i) => ({ line: i + 1, length: line.length })).filter(({ length }) => length > 200);
  expect(long).toEqual([]);
});

test('the README lists every path of openapi.json, and docs/api.md describes each', () => {
  // The path itself, not a longer one it begins (`/healthz` is not `/healthz/live`).
  const names = (text: string, p: string) => new RegExp(`${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w/.-])`).test(text);
  expect(documented.filter((p) => !names(read('README.md'), p))).toEqual([]);
  expect(documented.filter((p) => !names(read('docs/api.md'), p))).toEqual([]);
});
