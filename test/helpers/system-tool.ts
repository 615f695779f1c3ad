/**
 * Tests that need a program beyond Node, PostgreSQL and Redis (a Debian package): outside CI
 * they skip, with one line naming the package to install; under CI (`CI` set) a missing program
 * fails the run instead, so CI never passes by skipping (.ci/run installs them).
 *
 * @example const withChromium = describeWith({ tool: 'Chromium', available: fs.existsSync('/usr/bin/chromium'), install: 'apt-get install chromium' });
 *          withChromium('a real browser', () => { … });
 */
import { spawnSync } from 'node:child_process';
import { describe, test } from '@jest/globals';

export interface SystemTool {
  /** What is missing, as a person would name it. */
  readonly tool: string;
  readonly available: boolean;
  /** The command that installs it. */
  readonly install: string;
}

/** Whether `command args…` runs (exits 0): a program on the PATH. */
export const runs = (command: string, ...args: string[]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;

/**
 * Whether the tool is there. When it is not: under CI a failing test of `what` is registered;
 * outside, one line says what is skipped and what to install.
 */
export function requireTool({ tool, available, install }: SystemTool, what: string): boolean {
  if (available) return true;
  const missing = `${tool} is missing: ${install}`;
  if (process.env.CI) test(`${what} needs ${tool}`, () => { throw new Error(`${missing}. CI is set, so this fails instead of skipping.`); });
  else console.warn(`skipping ${what}: ${missing}`);
  return false;
}

/** `describe` when the tool is there; otherwise a skip with one line saying what to install (a failing test under CI). */
export function describeWith(needed: SystemTool): (name: string, tests: () => void) => void {
  return (name, tests) => {
    if (needed.available) describe(name, tests);
    else if (!process.env.CI && !requireTool(needed, `"${name}"`)) describe.skip(name, tests);
    else describe(name, () => { requireTool(needed, `"${name}"`); });
  };
}
