/**
 * The composition root started for its refusal: what `createApp` throws for an environment (a
 * start-up check), without a listener. Started after all, the app is closed again.
 *
 * @example expect(await startError({ DATA_DIR, JWKS_FILE })).toBeInstanceOf(ConfigError);
 */
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';

/** What createApp rejected with for `env`; undefined when it started (it is closed at once). */
export async function startError(env: Record<string, string>): Promise<unknown> {
  return createApp(loadConfig(env), () => {}).then(async (app) => { await app.close(); }, (reason: unknown) => reason);
}
