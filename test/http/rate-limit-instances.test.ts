/**
 * Several instances: two `node dist/main.js` processes on one Postgres and one Redis prefix
 * share the counters, with the default limits: the 61st request across both is limited, and
 * so is the 6th token request.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { buildDist, ROOT } from '../helpers/build.js';
import { createTestDatabase, deleteRedisKeys, freePort, REDIS_URL, tempDataDir, testRedisPrefix } from '../helpers/services.js';
import type { TestDatabase } from '../helpers/services.js';

interface Instance { readonly baseUrl: string; readonly child: ChildProcess; readonly dataDir: string; output: string }

/** Starts `node dist/main.js` as users do and waits for its start-up line. */
async function startInstance(env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  const dataDir = tempDataDir('oauth-instance');
  const baseUrl = `http://localhost:${port}`;
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'test', PORT: String(port), BASE_URL: baseUrl, DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const instance: Instance = { baseUrl, child, dataDir, output: '' };
  const collect = (chunk: Buffer) => { instance.output += chunk.toString('utf8'); };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`instance did not start:\n${instance.output}`)), 60_000);
    const check = () => {
      if (instance.output.includes('OAuth service at')) { clearTimeout(timer); resolve(); }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`instance exited (${code}):\n${instance.output}`)); });
  });
  return instance;
}

async function stopInstance(instance: Instance): Promise<void> {
  if (instance.child.exitCode === null && instance.child.signalCode === null) {
    const exited = new Promise((resolve) => instance.child.once('exit', resolve));
    instance.child.kill('SIGTERM');
    await exited;
  }
  fs.rmSync(instance.dataDir, { recursive: true, force: true });
}

describe('two instances on one Redis', () => {
  let database: TestDatabase;
  const prefix = testRedisPrefix();
  const instances: Instance[] = [];

  beforeAll(async () => {
    await buildDist();
    database = await createTestDatabase();
    // No rate-limit variables: the defaults (60 and 5).
    const env = { DATABASE_URL: database.url, REDIS_URL, REDIS_KEY_PREFIX: prefix };
    instances.push(await startInstance(env));
    instances.push(await startInstance(env));
  }, 180_000);
  afterAll(async () => {
    await Promise.all(instances.map(stopInstance));
    await database?.drop();
    await deleteRedisKeys(prefix);
  });

  test('the 61st request across both is limited', async () => {
    for (let i = 1; i <= 60; i += 1) {
      const res = await fetch(`${instances[i % 2]!.baseUrl}/nothing-here`, { headers: { accept: 'application/json' } });
      expect(res.status).toBe(404);
      expect(res.headers.get('ratelimit-remaining')).toBe(String(60 - i));
    }
    for (const instance of instances) {
      const res = await fetch(`${instance.baseUrl}/nothing-here`, { headers: { accept: 'application/json' } });
      expect(res.status).toBe(429);
      expect(await res.json()).toMatchObject({ error: 'too_many_requests' });
    }
  });

  test('the 6th token request across both is limited', async () => {
    const form = new URLSearchParams({ code: 'x', client_id: 'nobody', client_secret: 'x' }).toString();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      const res = await fetch(`${instances[i % 2]!.baseUrl}/api/token.php`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form,
      });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });
});
