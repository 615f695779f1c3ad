/**
 * The composition root started for its refusal: what `createApp` throws for an environment (a
 * start-up check), without a listener. Started after all, the app is closed again. Or started
 * with a logger of the test's own (`startApp`).
 *
 * @example expect(await startError({ DATA_DIR, JWKS_FILE })).toBeInstanceOf(ConfigError);
 */
import { createApp } from '../../src/app.js';
import type { App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Logger } from '../../src/ops/logger.js';

/** What createApp rejected with for `env`; undefined when it started (it is closed at once). */
export async function startError(env: Record<string, string>): Promise<unknown> {
  return createApp(loadConfig(env), () => {}).then(async (app) => { await app.close(); }, (reason: unknown) => reason);
}

/** The composition root started for `env` with `logger`, without a listener: what start-up logs on the way. */
export function startApp(env: Record<string, string>, logger: Logger): Promise<App> {
  return createApp(loadConfig(env), logger);
}
