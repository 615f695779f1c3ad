/**
 * The house's shape (docs/architecture.md), checked on every run: the layers of src/ as
 * .dependency-cruiser.cjs declares them (no two folders depend on each other, no module cycles,
 * only src/main.ts and the test helpers import the composition root).
 */
import { createRequire } from 'node:module';
import { expect, test } from '@jest/globals';
import { cruise } from 'dependency-cruiser';
import type { ICruiseOptions, IViolation } from 'dependency-cruiser';
import { ROOT } from '../helpers/build.js';

const config = createRequire(import.meta.url)(`${ROOT}.dependency-cruiser.cjs`) as { forbidden: NonNullable<ICruiseOptions['ruleSet']>['forbidden']; options: ICruiseOptions };

test('every import follows the layers: no folder cycles, no module cycles, one composition root', async () => {
  const cwd = process.cwd();
  process.chdir(ROOT);
  try {
    const { output } = await cruise(['src', 'test', 'bench', 'scripts'], { ...config.options, validate: true, ruleSet: { forbidden: config.forbidden } });
    const { summary } = output as { summary: { violations: IViolation[]; totalCruised: number } };
    expect(summary.totalCruised).toBeGreaterThan(100); // it read the tree (a wrong path would cruise nothing)
    expect(summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (${v.cycle.map((c) => c.name).join(' → ')})` : ''}`)).toEqual([]);
  } finally {
    process.chdir(cwd);
  }
});
