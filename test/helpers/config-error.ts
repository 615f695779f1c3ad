/** The ConfigError a start-up step throws (fails the test if it throws none or another). */
import { ConfigError, loadConfig } from '../../src/config.js';

/** The ConfigError `run` throws. */
export function configErrorOf(run: () => unknown, what = 'the call'): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`${what} threw no ConfigError`);
}

/** The ConfigError loadConfig throws for `env`. */
export const configError = (env: Record<string, string>): ConfigError => configErrorOf(() => loadConfig(env), `loadConfig(${JSON.stringify(env)})`);
