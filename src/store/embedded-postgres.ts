/**
 * Embedded PostgreSQL (PGlite) for the zero-install default. One process at a time may own a
 * data folder, so a lock file beside it turns a second opener (say, the CLI while the server
 * runs) into a clear error instead of a corrupted database.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';

export interface EmbeddedPostgres {
  readonly pglite: PGlite;
  close(): Promise<void>;
}

/** Whether a process with this pid exists (EPERM: it does, owned by someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Lock files this process holds. A lock naming our own pid may be stale (left by an earlier
 * process that had the same pid: PID 1 in every container), so the pid alone cannot tell
 * whether this process already has the folder open.
 */
const heldHere = new Set<string>();

/** Another process (or this one) has the data folder open. */
export class DatabaseInUseError extends Error {
  override name = 'DatabaseInUseError';
}

function inUse(lockFile: string, owner: number): DatabaseInUseError {
  return new DatabaseInUseError(
    `the embedded database in ${path.dirname(lockFile)} is in use by process ${owner}; ` +
    'stop that process first, or set DATABASE_URL to share a PostgreSQL server',
  );
}

function acquireLock(lockFile: string): () => void {
  const key = path.resolve(lockFile);
  if (heldHere.has(key)) throw inUse(lockFile, process.pid);
  for (;;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      heldHere.add(key);
      return () => {
        heldHere.delete(key);
        fs.rmSync(lockFile, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(fs.readFileSync(lockFile, 'utf8'));
      if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) throw inUse(lockFile, owner);
      fs.rmSync(lockFile, { force: true }); // left behind by a process that died
    }
  }
}

/** Opens (creating on first use) the PGlite database under `dataDir/pglite`. */
export async function openEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const release = acquireLock(path.join(dataDir, 'pglite.lock'));
  try {
    // Loaded only in embedded mode: a mode loads only what it uses.
    const { PGlite } = await import('@electric-sql/pglite');
    const pglite = await PGlite.create(path.join(dataDir, 'pglite'));
    return {
      pglite,
      async close() {
        try {
          await pglite.close();
        } finally {
          release();
        }
      },
    };
  } catch (error) {
    release();
    throw error;
  }
}
