/**
 * The test runs' data folders: each file's DATA_DIRs and private clusters are made under
 * TEST_DATA_ROOT with names that begin `oauth-r<run pid>-` (test/helpers/services.ts
 * `tempDataDir`), so that test/global-teardown.mjs removes what is left of the run, and the next
 * run what a killed run left, as with the run's databases (test/run-databases.mjs).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Memory-backed folder of Linux machines. */
const MEMORY = '/dev/shm';

/**
 * Where tests keep their data folders: memory (/dev/shm) where the machine has room there, since
 * an embedded database is copied into each folder and written through it; else the temporary
 * folder. A disk under several test runs at once takes seconds to copy one.
 */
export const TEST_DATA_ROOT = (() => {
  try {
    const shm = fs.statfsSync(MEMORY);
    fs.accessSync(MEMORY, fs.constants.W_OK);
    if (shm.bavail * shm.bsize >= 2 ** 30) return MEMORY;
  } catch {
    // no /dev/shm: a machine other than Linux
  }
  return os.tmpdir();
})();

/** The beginning of the names of run `run`'s folders. */
export const runFolderPrefix = (run) => `oauth-r${run}-`;

/**
 * Removes every run folder whose run (its process id) `whose` picks, in memory and in the temporary
 * folder alike: a file that found no room in memory kept its folders in the latter. A folder this
 * user may not remove (another user's run) is left to its owner.
 */
export function removeRunFolders(whose) {
  for (const root of new Set([MEMORY, os.tmpdir()])) {
    let names;
    try {
      names = fs.readdirSync(root);
    } catch {
      continue; // no memory folder here
    }
    for (const name of names) {
      const run = /^oauth-r(\d+)-/.exec(name)?.[1];
      if (run === undefined || !whose(Number(run))) continue;
      try {
        fs.rmSync(path.join(root, name), { recursive: true, force: true });
      } catch (error) {
        process.stderr.write(`left ${path.join(root, name)}: ${error.message}\n`);
      }
    }
  }
}
