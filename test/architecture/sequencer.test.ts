/**
 * The order of the test files (test/sequencer.mjs): the files it names as the longest are test
 * files of this suite, each once, so that a renamed or removed file does not silently drop out of
 * the front of a fresh clone's run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from '@jest/globals';
import { ROOT } from '../helpers/build.js';
import { LONGEST } from '../sequencer.mjs';

test('every file the sequencer puts first is a test file of the suite, named once', () => {
  const names = [...LONGEST];
  expect(names.filter((name) => !name.endsWith('.test.ts') || !fs.existsSync(path.join(ROOT, 'test', name)))).toEqual([]);
  expect(new Set(names).size).toBe(names.length);
});
