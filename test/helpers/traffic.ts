/**
 * Steady client traffic for tests that change something under load (a rotation): each worker,
 * until stopped, walks the authorization flow on one instance, exchanges the code on the next,
 * calls userinfo on every instance, refreshes, and calls userinfo again; every request's outcome
 * is recorded. A worker stands for one running copy of the client: `secretOf(worker)` is read
 * before each token request, so a test decides when each copy switches to a new secret.
 *
 * @example const traffic = startTraffic([a, b], client, user, { workers: 2, secretOf: () => secret }); …; await traffic.stop(); expect(traffic.failures()).toEqual([]);
 */
import { obtainCode } from './browser.js';
import type { TestClient, TestUser } from './browser.js';
import { tokenRequest, userinfo } from './fixtures.js';
import type { TestApp } from './test-app.js';

export interface Outcome {
  worker: number;
  what: 'authorize' | 'code exchange' | 'refresh' | 'userinfo';
  instance: string;
  status: number;
  /** The error's body (or message) when it failed. */
  error?: unknown;
  at: number;
}

export interface Traffic {
  readonly outcomes: Outcome[];
  /** Every outcome but a 200. */
  failures(): Outcome[];
  /** How many requests of a kind were answered 200 since `since` (epoch ms). */
  succeeded(what: Outcome['what'], since?: number): number;
  /** Lets each worker finish the step it is in, then resolves. */
  stop(): Promise<void>;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Resolves once `done()` holds (checked every 25 ms); throws naming `what` after `timeoutMs`. */
export async function waitFor(what: string, done: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!await done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

export function startTraffic(instances: readonly TestApp[], client: TestClient, user: TestUser, options: { workers: number; secretOf: (worker: number) => string }): Traffic {
  const outcomes: Outcome[] = [];
  let running = true;
  const record = (worker: number, what: Outcome['what'], t: TestApp, status: number, error?: unknown) => {
    outcomes.push({ worker, what, instance: t.baseUrl, status, ...(status === 200 ? {} : { error }), at: Date.now() });
    return status === 200;
  };

  async function loop(worker: number) {
    for (let round = 0; running; round += 1) {
      const [first, second] = [instances[(worker + round) % instances.length]!, instances[(worker + round + 1) % instances.length]!];
      let code: string;
      try {
        code = await obtainCode(first.baseUrl, client, user);
        record(worker, 'authorize', first, 200);
      } catch (error) {
        record(worker, 'authorize', first, 0, String(error));
        continue;
      }
      const exchanged = await tokenRequest(second, { code, client_id: client.client_id, client_secret: options.secretOf(worker) });
      if (!record(worker, 'code exchange', second, exchanged.status, exchanged.body)) continue;
      for (const t of instances) {
        const info = await userinfo(t, `Bearer ${exchanged.body.access_token}`);
        record(worker, 'userinfo', t, info.status, info.body);
      }
      const refreshed = await tokenRequest(first, { grant_type: 'refresh_token', refresh_token: String(exchanged.body.refresh_token), client_id: client.client_id, client_secret: options.secretOf(worker) });
      if (!record(worker, 'refresh', first, refreshed.status, refreshed.body)) continue;
      const info = await userinfo(second, `Bearer ${refreshed.body.access_token}`);
      record(worker, 'userinfo', second, info.status, info.body);
    }
  }

  const done = Promise.all(Array.from({ length: options.workers }, (_, worker) => loop(worker)));
  return {
    outcomes,
    failures: () => outcomes.filter((outcome) => outcome.status !== 200),
    succeeded: (what, since = 0) => outcomes.filter((outcome) => outcome.what === what && outcome.status === 200 && outcome.at >= since).length,
    async stop() {
      running = false;
      await done;
    },
  };
}
