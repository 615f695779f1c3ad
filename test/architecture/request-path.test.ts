/**
 * How far a code exchange travels (docs/architecture.md): the files of src/ whose functions one
 * exchange runs, measured with V8's precise coverage on the built service
 * (scripts/request-path.mjs, PostgreSQL + Redis), are exactly the ones docs/architecture.md
 * lists, each with its role. How many there are is a figure for that page, not a rule.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, test } from '@jest/globals';
import { buildDist, ROOT } from '../helpers/build.js';
import { runNode } from '../helpers/run-node.js';
import { POSTGRES_ADMIN_URL, REDIS_URL } from '../helpers/services.js';

/** The files the page lists between its request-path markers, one table row each. */
function documented(): string[] {
  const page = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const [, table = ''] = /<!-- request-path:start -->([\s\S]*?)<!-- request-path:end -->/.exec(page) ?? [];
  return [...table.matchAll(/^\| \d+ \| `(src\/[^`]+)` \| [^|]*\S[^|]* \|$/gm)].map((match) => match[1]!).sort();
}

beforeAll(async () => { await buildDist(); }, 180_000);

test('a code exchange runs the files of src/ that docs/architecture.md lists with their roles, and no others', async () => {
  const run = await runNode('scripts/request-path.mjs', ['--json'], { TEST_POSTGRES_URL: POSTGRES_ADMIN_URL, TEST_REDIS_URL: REDIS_URL }, 120_000);
  expect({ code: run.code, stderr: run.code === 0 ? '' : run.stderr }).toEqual({ code: 0, stderr: '' });
  const { files } = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { files: string[] };
  expect(files.length).toBeGreaterThan(5); // it measured something
  expect(documented()).toEqual(files);
}, 180_000);
