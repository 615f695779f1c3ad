/**
 * Tests that need a program beyond Node, PostgreSQL and Redis (a Debian package): outside CI
 * they skip, with one line naming the package to install; under CI (`CI` set) a missing program
 * fails the run instead, so CI never passes by skipping (.ci/run installs them).
 *
 * @example const withChromium = describeWith({ tool: 'Chromium', available: fs.existsSync('/usr/bin/chromium'), install: 'apt-get install chromium' });
 *          withChromium('a real browser', () => { … });
 */
import { describe, test } from '@jest/globals';

export interface SystemTool {
  /** What is missing, as a person would name it. */
  readonly tool: string;
  readonly available: boolean;
  /** The command that installs it. */
  readonly install: string;
}

/** `describe` when the tool is there; otherwise a skip with one line saying what to install (a failing test under CI). */
export function describeWith({ tool, available, install }: SystemTool): (name: string, tests: () => void) => void {
  if (available) return (name, tests) => describe(name, tests);
  return (name, tests) => {
    const missing = `${tool} is missing: ${install}`;
    if (process.env.CI) {
      describe(name, () => {
        test(`needs ${tool}`, () => { throw new Error(`${missing}. CI is set, so this fails instead of skipping.`); });
      });
      return;
    }
    console.warn(`skipping "${name}": ${missing}`);
    describe.skip(name, tests);
  };
}
