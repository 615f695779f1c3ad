/**
 * A lock between processes on this machine (jest's workers, other runs): a file created
 * exclusively, holding the owner's pid; a lock whose owner died is taken over.
 *
 * @example await withFileLock(path.join(os.tmpdir(), 'thing.lock'), async () => { … });
 */
import fs from 'node:fs';
import { isAlive } from '../../src/store/embedded-postgres.js';

/** Runs `use` while holding `lockFile`; waits up to `waitMs` for another holder. */
export async function withFileLock<T>(lockFile: string, use: () => Promise<T>, waitMs = 60_000): Promise<T> {
  for (const deadline = Date.now() + waitMs; ;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(fs.readFileSync(lockFile, 'utf8'));
      if (owner && !isAlive(owner)) fs.rmSync(lockFile, { force: true }); // left by a killed run
      if (Date.now() > deadline) throw new Error(`lock ${lockFile} held by process ${owner} for too long`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  try {
    return await use();
  } finally {
    fs.rmSync(lockFile, { force: true });
  }
}
