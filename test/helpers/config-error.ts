/** The ConfigError loadConfig throws for `env` (fails the test if it throws none or another). */
import { ConfigError, loadConfig } from '../../src/config.js';

export function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}
