/**
 * The one way a test reaches a program beyond Node, PostgreSQL and Redis (a Debian package,
 * listed in system-tools.mjs): `describeWith(TOOL)` around the tests, and `program(TOOL)` inside
 * them for its command. Outside CI a missing program skips those tests, with one line naming the
 * package to install; under CI (`CI` set) it fails the run instead, so CI never passes by
 * skipping (.ci/run installs them). `program` refuses to answer outside its `describeWith`, even
 * where the program is installed, so a test that forgot the wrapper fails on every machine, not
 * only on a fresh one. test/architecture/system-tools.test.ts checks no test file goes around it.
 *
 * HIDE_SYSTEM_TOOLS=1 makes every one of them count as missing (scripts/test-without-tools.mjs,
 * the bare pass that proves a fresh machine skips instead of failing); a comma-separated list of
 * their names (CHROMIUM,WRK) hides those alone.
 *
 * @example describeWith(CHROMIUM)('a real browser', () => { test('…', async () => { await chromium.launch({ executablePath: program(CHROMIUM) }); }); });
 */
import { afterAll, beforeAll, describe, test } from '@jest/globals';
import { SYSTEM_TOOLS } from './system-tools.mjs';
import type { SystemToolName } from './system-tools.mjs';

export interface SystemTool {
  /** Its name in the table, as the code spells it. */
  readonly name: SystemToolName;
  /** What is missing, as a person would name it. */
  readonly tool: string;
  /** The command that installs it. */
  readonly install: string;
  readonly available: boolean;
}

const found = new Map<SystemToolName, string | undefined>();
/** Its command or path, looked for once per test file and only by the files that name it. */
const HIDDEN = process.env.HIDE_SYSTEM_TOOLS?.split(',').map((entry) => entry.trim()) ?? [];

function locate(name: SystemToolName): string | undefined {
  if (HIDDEN.includes('1') || HIDDEN.includes(name)) return undefined;
  if (!found.has(name)) found.set(name, SYSTEM_TOOLS[name].find());
  return found.get(name);
}

const tool = (name: SystemToolName): SystemTool => ({
  name,
  tool: SYSTEM_TOOLS[name].tool,
  install: SYSTEM_TOOLS[name].install,
  get available() { return locate(name) !== undefined; },
});

export const PROMETHEUS_PARSER = tool('PROMETHEUS_PARSER');
export const CHROMIUM = tool('CHROMIUM');
export const WRK = tool('WRK');
export const PGBOUNCER = tool('PGBOUNCER');
export const REDIS_SENTINEL = tool('REDIS_SENTINEL');
export const NGINX = tool('NGINX');
export const OPENSSL = tool('OPENSSL');
export const GIT_CHECKOUT = tool('GIT_CHECKOUT');
export const DOCKER = tool('DOCKER');

/** How many `describeWith(tool)` blocks are being collected or run right now, per tool. */
const open = new Map<SystemToolName, number>();
const enter = (name: SystemToolName) => { open.set(name, (open.get(name) ?? 0) + 1); };
const leave = (name: SystemToolName) => { open.set(name, (open.get(name) ?? 1) - 1); };

/** The tool's command or path, for a test (or a hook, or a helper it calls) inside `describeWith(tool)`; throws anywhere else. */
export function program(needed: SystemTool): string {
  if (!open.get(needed.name)) {
    throw new Error(`${needed.tool} was reached outside describeWith(${needed.name}): wrap the tests that need it, so that a machine without it skips them (${needed.install})`);
  }
  const command = locate(needed.name);
  if (command === undefined) throw new Error(`${needed.tool} is missing: ${needed.install}`);
  return command;
}

/** Under CI a failing test of `what`; outside, one line saying what is skipped and what to install. */
function missing({ tool: what, install }: SystemTool, name: string): void {
  const line = `${what} is missing: ${install}`;
  if (process.env.CI) test(`${name} needs ${what}`, () => { throw new Error(`${line}. CI is set, so this fails instead of skipping.`); });
  else process.stderr.write(`skipping ${name}: ${line}\n`);
}

/** `describe` when the tool is there, its `program` usable inside; otherwise a skip with one line saying what to install (a failing test under CI). */
export function describeWith(needed: SystemTool): (name: string, tests: () => void) => void {
  return (name, tests) => {
    if (!needed.available) {
      missing(needed, `"${name}"`);
      if (process.env.CI) return;
      describe.skip(name, tests);
      return;
    }
    describe(name, () => {
      // Hooks of a block run in the order they are declared: this one before the tests' own, the
      // last one after theirs.
      beforeAll(() => { enter(needed.name); });
      enter(needed.name); // the tests' own code runs now too, while jest collects them
      try {
        tests();
      } finally {
        leave(needed.name);
      }
      afterAll(() => { leave(needed.name); });
    });
  };
}
